package cleanup

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/helminstall"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/pkg/outbound"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// GuestOptions say whether and how the clean-up reaches the guest clusters.
type GuestOptions struct {
	// Clean, when set, takes out of every reachable guest what the operator put there: the
	// releases it applied (only those whose records it wrote), its copy of the image pull Secret,
	// the keys it wrote into kube-vip-cloud-provider's ConfigMap, and the node selector it gave the
	// Harvester cloud provider's kube-vip.
	Clean bool
	// FleetNamespace holds the provisioning clusters and their kubeconfig Secrets.
	FleetNamespace string
	// Timeout bounds the work in one guest; Total all of it. Guests not reached within Total
	// are reported, not waited for.
	Timeout, Total time.Duration
	// Workers bounds the guests worked on at once.
	Workers int
}

// GuestOutcome is what the clean-up did in one guest cluster.
type GuestOutcome struct {
	Cluster string
	// Done lists what was taken out; Problem says why the guest was not (or not wholly)
	// cleaned, "" when it was.
	Done    []string
	Problem string
}

// provisioningClusters is Rancher's provisioning.cattle.io/v1 clusters.
func provisioningClusters() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "provisioning.cattle.io", Version: "v1", Resource: "clusters"}
}

// guestWork is one guest cluster as its FloatingIPs describe it.
type guestWork struct {
	cluster   string
	addresses []netip.Addr
	releases  []v1.GuestRelease
}

// cleanGuests takes the operator's changes out of every guest cluster a FloatingIP names, within
// opts' bounds, and reports each guest.
func cleanGuests(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, opts GuestOptions) ([]GuestOutcome, error) {
	work, err := guestsOf(ctx, dyn)
	if err != nil || len(work) == 0 {
		return nil, err
	}
	settings, cancel := context.WithTimeout(ctx, guest.DefaultTimeout)
	rancher, err := guest.RancherAddresses(settings, dyn.Resource(guest.SettingResource()))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("reading Rancher's addresses to reach the guests: %w", err)
	}
	dir, err := os.MkdirTemp("", "kube-fip-cleanup-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// An uninstall fetches no chart: the network of chart sources is none of its concern.
	installer, err := helminstall.NewInstaller(dir, helminstall.DefaultLimits(), outbound.Network{})
	if err != nil {
		return nil, err
	}
	total, cancelAll := context.WithTimeout(ctx, opts.Total)
	defer cancelAll()
	out := make([]GuestOutcome, len(work))
	var g errgroup.Group
	g.SetLimit(max(1, opts.Workers))
	for i := range work {
		g.Go(func() error {
			out[i] = cleanGuest(total, kube, dyn, installer, rancher, work[i], opts)
			return nil
		})
	}
	return out, g.Wait()
}

// guestsOf groups the FloatingIPs naming a guest cluster by cluster: the addresses they hold and
// the releases they remember the operator applied.
func guestsOf(ctx context.Context, dyn dynamic.Interface) ([]guestWork, error) {
	list, err := dyn.Resource(v1.SchemeGroupVersion.WithResource(v1.FloatingIPResourceName)).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing FloatingIPs: %w", err)
	}
	byCluster := map[string]*guestWork{}
	for i := range list.Items {
		var f v1.FloatingIP
		if runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &f) != nil {
			continue
		}
		cluster := f.Annotations[v1.AnnotationClusterName]
		if cluster == "" {
			continue
		}
		w := byCluster[cluster]
		if w == nil {
			w = &guestWork{cluster: cluster}
			byCluster[cluster] = w
		}
		if a, err := netip.ParseAddr(f.Status.IPAddress); err == nil {
			w.addresses = append(w.addresses, a)
		}
		for _, r := range f.Status.KubevipReleases {
			if !slices.Contains(w.releases, r) {
				w.releases = append(w.releases, r)
			}
		}
	}
	var out []guestWork
	for _, cluster := range slices.Sorted(maps.Keys(byCluster)) {
		out = append(out, *byCluster[cluster])
	}
	return out, nil
}

// cleanGuest reaches one guest through Rancher's cluster proxy, as the operator does, and takes
// out what the operator put there: kube-vip's release first (so that nothing announces the
// addresses), the provider's, its image pull Secret, its ingress Service, the ConfigMap keys, then
// Harvester's kube-vip gets its nodes back.
func cleanGuest(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, installer *helminstall.Installer,
	rancher []string, w guestWork, opts GuestOptions) GuestOutcome {
	o := GuestOutcome{Cluster: w.cluster}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	client, err := connect(ctx, kube, dyn, rancher, w.cluster, opts)
	if err != nil {
		// connect's errors quote what the API server and the guest client said: redacted here,
		// like every problem found in a guest, before the log and the report show it.
		o.Problem = "not reached: " + redact.Error(err)
		return o
	}
	removal := installer.RemoveReleases(ctx, client, w.releases)
	o.Done = removal.Done
	problems := removal.Problems
	switch removed, err := kubevipconfig.RemoveIngressService(ctx, client.Core); {
	case err != nil:
		problems = append(problems, client.Redact(err.Error()))
	case removed:
		o.Done = append(o.Done, fmt.Sprintf("the Service %s/%s removed", kubevipconfig.IngressNamespace, kubevipconfig.IngressServiceName))
	}
	refs := []kubevipconfig.ConfigMapRef{kubevipconfig.DefaultConfigMap()}
	for _, r := range w.releases {
		for _, ref := range helminstall.ProviderConfigMaps(r.Namespace) {
			if !slices.Contains(refs, ref) {
				refs = append(refs, ref)
			}
		}
	}
	for _, ref := range refs {
		keys, err := kubevipconfig.RemoveAddresses(ctx, client.Core, ref, w.addresses)
		switch {
		case err != nil:
			problems = append(problems, client.Redact(err.Error()))
		case len(keys) > 0:
			o.Done = append(o.Done, fmt.Sprintf("%s: %s removed", ref, strings.Join(keys, ", ")))
		}
	}
	switch res, err := kubevipconfig.RestoreHarvesterKubevip(ctx, client.Apps); {
	case err != nil:
		problems = append(problems, client.Redact(err.Error()))
	case res == kubevipconfig.DaemonSetRestored:
		o.Done = append(o.Done, "the Harvester cloud provider's kube-vip given back its nodes")
	}
	o.Problem = strings.Join(problems, "; ")
	return o
}

// connect builds a guest client from the cluster's provisioning cluster and kubeconfig Secret.
func connect(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, rancher []string, cluster string, opts GuestOptions) (*guest.Client, error) {
	prov, err := dyn.Resource(provisioningClusters()).Namespace(opts.FleetNamespace).Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading provisioning cluster %s/%s: %w", opts.FleetNamespace, cluster, err)
	}
	id, _, _ := unstructured.NestedString(prov.Object, "status", "clusterName")
	secretName, _, _ := unstructured.NestedString(prov.Object, "status", "clientSecretName")
	secretName = cmp.Or(secretName, cluster+"-kubeconfig")
	secret, err := kube.CoreV1().Secrets(opts.FleetNamespace).Get(ctx, secretName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig Secret %s/%s: %w", opts.FleetNamespace, secretName, err)
	}
	client, err := guest.NewClient(ctx, guest.Target{Name: cluster, ClusterID: id, Kubeconfig: secret.Data[guest.KubeconfigKey], Rancher: rancher}, guest.DefaultTimeout)
	if err != nil {
		return nil, err
	}
	if state, err := client.Check(ctx); state != guest.Connected {
		return nil, fmt.Errorf("the guest does not answer as its owner through Rancher's cluster proxy: %s", client.Redact(fmt.Sprint(err)))
	}
	return client, nil
}

// logGuests writes what the clean-up did in each guest, and names the guests it could not clean.
func logGuests(outcomes []GuestOutcome) {
	for _, o := range outcomes {
		done := "nothing of the operator's found"
		if len(o.Done) > 0 {
			done = strings.Join(o.Done, "; ")
		}
		switch {
		case o.Problem != "" && len(o.Done) == 0:
			// Nothing was found because nothing could be looked at.
			logrus.Warnf("guest cluster %s: NOT CLEANED: %s", o.Cluster, o.Problem)
			continue
		case o.Problem != "":
			logrus.Warnf("guest cluster %s: %s; NOT CLEANED: %s", o.Cluster, done, o.Problem)
			continue
		}
		logrus.Infof("guest cluster %s: %s", o.Cluster, done)
	}
}
