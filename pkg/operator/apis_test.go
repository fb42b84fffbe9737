package operator

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"
)

// servedAPIs is a discovery answering for the given group/versions and resources.
func servedAPIs(served map[string][]string) *fakediscovery.FakeDiscovery {
	fake := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	for gv, resources := range served {
		list := &metav1.APIResourceList{GroupVersion: gv}
		for _, r := range resources {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: r})
		}
		fake.Resources = append(fake.Resources, list)
	}
	return fake
}

// TestWaitForAPIsNamesWhatIsMissing: installed where Rancher is not, the operator says which API
// group is missing and what provides it, and starts nothing until it is served.
func TestWaitForAPIsNamesWhatIsMissing(t *testing.T) {
	crds := map[string][]string{"kubefip.k8s.binbash.org/v1": {"floatingips", "floatingipranges", "floatingipallocations"}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := waitForAPIs(ctx, servedAPIs(crds), 10*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "clusters.provisioning.cattle.io/v1, which Rancher") ||
		!strings.Contains(err.Error(), "clusters.management.cattle.io/v3") || strings.Contains(err.Error(), "kubefip") {
		t.Errorf("without Rancher: %v", err)
	}
	all := map[string][]string{"provisioning.cattle.io/v1": {"clusters"}, "management.cattle.io/v3": {"clusters"}}
	for gv, r := range crds {
		all[gv] = r
	}
	if err := waitForAPIs(context.Background(), servedAPIs(all), time.Millisecond); err != nil {
		t.Errorf("with every API served: %v", err)
	}
}
