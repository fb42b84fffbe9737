package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// benchGuestServers is how many real guest API servers the clusters of BenchmarkStartup
// share, round robin.
const benchGuestServers = 8

// connectGuests makes every guest reachable through proxy, as Rancher records a running cluster:
// a guest API server of servers answers for it with a token and Rancher user of its own (with
// cluster-owner rights there) and a kube-system of its own (see ClusterProxy.RegisterSharing), the kubeconfig Secret <name>-kubeconfig holds the proxy's
// kubeconfig, the provisioning cluster's status names that Secret, and the management cluster is
// Connected.
func connectGuests(r *rancher.World, proxy *guests.ClusterProxy, servers []*controlplane.Guest, s benchGuests) error {
	index := map[string]int{}
	for i, name := range s.names {
		index[name] = i
	}
	return rig.Parallel(s.names, func(name string) error {
		g := s.byName[name]
		token := "token-" + name
		// Each cluster's kube-system is its own, as in a guest of its own.
		if err := proxy.RegisterSharing(g.ID, servers[index[name]%len(servers)], token, "ks-"+g.ID); err != nil {
			return fmt.Errorf("registering %s with the cluster proxy: %w", g.ID, err)
		}
		kc, err := proxy.Kubeconfig(g.ID, token)
		if err != nil {
			return err
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: rancher.FleetNamespace}, Data: map[string][]byte{"value": kc}}
		if _, err := r.Kube.CoreV1().Secrets(rancher.FleetNamespace).Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the kubeconfig Secret of %s: %w", name, err)
		}
		m, err := r.Mgmt.Get(g.ID, metav1.GetOptions{})
		if err != nil {
			return err
		}
		m.Status.Conditions = []mgmtv3.ClusterCondition{{Type: "Connected", Status: corev1.ConditionTrue}}
		if _, err := r.Mgmt.UpdateStatus(m); err != nil {
			return fmt.Errorf("marking management cluster %s Connected: %w", g.ID, err)
		}
		p, err := r.Prov.Get(rancher.FleetNamespace, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Status.ClientSecretName = name + "-kubeconfig"
		if _, err := r.Prov.UpdateStatus(p); err != nil {
			return fmt.Errorf("naming the kubeconfig Secret of %s: %w", name, err)
		}
		return nil
	})
}

// dropKubeconfigs deletes the guests' kubeconfig Secrets.
func dropKubeconfigs(r *rancher.World, s benchGuests) error {
	return rig.Parallel(s.names, func(name string) error {
		err := r.Kube.CoreV1().Secrets(rancher.FleetNamespace).Delete(context.Background(), s.byName[name].SecretName(), metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil // removeGuests came first
		}
		return err
	})
}

// waitGuestsConfigured waits until every guest's FloatingIP says GuestConfigured=True and returns
// when the last one did.
func waitGuestsConfigured(b *testing.B, p *controlplane.Process, fips *fipWatch, guests []string, timeout time.Duration) time.Time {
	// As waitConverged: each look asks only about the guests not yet seen configured.
	waiting := slices.Clone(guests)
	var last *v1.FloatingIP
	var done time.Time
	err := rig.UntilEvery(20*time.Millisecond, timeout, "every guest configured", p.Exited, func() (bool, error) {
		last = nil
		waiting = slices.DeleteFunc(waiting, func(name string) bool {
			x, err := fips.Get("c-m-"+name, name+"-kubevip")
			if err == nil && !v1.GuestConfigured.IsTrue(x) {
				last = x
			}
			return err == nil && v1.GuestConfigured.IsTrue(x)
		})
		done = time.Now()
		return len(waiting) == 0, nil
	})
	if err != nil {
		b.Fatalf("%v: %d of %d guests configured; one that is not: %s; the operator's output ends:\n%s", err, len(guests)-len(waiting), len(guests), suite.StatusText(last), rig.LastLines(p.Logs(), 60))
	}
	return done
}
