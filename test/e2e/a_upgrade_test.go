package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
)

// addresses are the FloatingIPs of the cluster by namespace/name, with the address each holds.
func (s *suite) addresses(t *testing.T) map[string]string {
	t.Helper()
	list, err := s.fips.FloatingIP().List("", metav1.ListOptions{})
	rig.Must(t, err)
	out := map[string]string{}
	for _, x := range list.Items {
		out[x.Namespace+"/"+x.Name] = x.Status.IPAddress
	}
	return out
}

// TestUpgradeFromThePreviousRelease (first: it leaves this build installed for the others): the
// previous release's charts and image, installed with Helm, allocate the guest's FloatingIP and
// more; helm upgrade to this build's charts, with the values a person gave, keeps every address,
// and this build's image runs the operator's pods.
func TestUpgradeFromThePreviousRelease(t *testing.T) {
	s := need(t)
	if s.upgraded {
		t.Skip("the releases were upgraded already")
	}
	ctx := context.Background()
	ns := "e2e-upgrade"
	_, err := s.mgmtKube.CoreV1().Namespaces().Create(ctx, namespace(ns), metav1.CreateOptions{})
	rig.Must(t, err)
	_, err = s.fips.FloatingIPRange().Create(&v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "e2e-upgrade"},
		Spec: v1.FloatingIPRangeSpec{IPRange: "198.18.201.0/28", AllowedNamespaces: []string{ns}}})
	rig.Must(t, err)
	for i := 0; i < 4; i++ {
		_, err := s.fips.FloatingIP().Create(&v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fip%d", i), Namespace: ns,
			Annotations: map[string]string{v1.AnnotationFloatingIPRange: "e2e-upgrade"}}})
		rig.Must(t, err)
	}
	var before map[string]string
	rig.Eventually(t, 2*time.Minute, "the previous release allocating the guest's FloatingIP and four more", func() bool {
		before = s.addresses(t)
		for _, a := range before {
			if a == "" {
				return false
			}
		}
		return len(before) == 5
	})
	for _, p := range s.operatorPods(t) {
		if p.Spec.Containers[0].Image != s.previousImage {
			t.Errorf("before the upgrade, pod %s runs %s; want the previous release's %s", p.Name, p.Spec.Containers[0].Image, s.previousImage)
		}
	}
	began := time.Now()
	rig.Must(t, s.upgradeToThisRelease(ctx))
	s.upgraded = true
	t.Logf("upgraded in %s", time.Since(began).Round(100*time.Millisecond))
	rig.Eventually(t, 2*time.Minute, "the operator's pods running this build's image", func() bool {
		pods := s.operatorPods(t)
		for _, p := range pods {
			if p.Spec.Containers[0].Image != s.operatorImage || !podReady(p) {
				return false
			}
		}
		return len(pods) == 1
	})
	after := s.addresses(t)
	for name, addr := range before {
		if after[name] != addr {
			t.Errorf("FloatingIP %s held %s before the upgrade and %q after", name, addr, after[name])
		}
	}
}
