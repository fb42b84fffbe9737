package floatingip

import (
	"net/netip"
	"testing"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

// TestSelectionInputsChanged: only a change of a provisioning cluster's labels, or of the guest
// namespace it names, judges its waiting FloatingIPs again; a status heartbeat does not.
func TestSelectionInputsChanged(t *testing.T) {
	t.Parallel()
	cluster := func(labels map[string]string, ns, secret string) *provv1.Cluster {
		c := &provv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet-default", Name: "demo", Labels: labels}}
		c.Status.ClusterName, c.Status.ClientSecretName = ns, secret
		return c
	}
	base := cluster(map[string]string{"env": "dev"}, "c-m-1", "a")
	for _, tc := range []struct {
		what     string
		old, obj interface{}
		want     bool
	}{
		{"a status heartbeat", base, cluster(map[string]string{"env": "dev"}, "c-m-1", "b"), false},
		{"the same object handled again", base, base, false},
		{"a label changes", base, cluster(map[string]string{"env": "prod"}, "c-m-1", "a"), true},
		{"a label is added", base, cluster(map[string]string{"env": "dev", "tier": "1"}, "c-m-1", "a"), true},
		{"the labels go", base, cluster(nil, "c-m-1", "a"), true},
		{"it comes to name its namespace", cluster(map[string]string{"env": "dev"}, "", "a"), base, true},
		{"not a provisioning cluster before", "junk", base, true},
		{"not a provisioning cluster now", base, "junk", false},
	} {
		if got := selectionInputsChanged(tc.old, tc.obj); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.what, got, tc.want)
		}
	}
}

// TestOverflowStaysOnTheNetwork: a guest cluster's FloatingIP refused by a full range moves to the
// next range of the same Harvester cluster and network, and never to one of another network or
// one that names no network, however much room they have.
func TestOverflowStaysOnTheNetwork(t *testing.T) {
	rng := func(name, cidr, network string) *v1.FloatingIPRange {
		r := &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid"),
			Annotations: map[string]string{v1.AnnotationHarvesterClusterName: "harv1"}}, Spec: v1.FloatingIPRangeSpec{IPRange: cidr}}
		if network != "" {
			r.Annotations[v1.AnnotationHarvesterNetworkName] = network
		}
		return r
	}
	for _, tc := range []struct {
		name   string
		others []*v1.FloatingIPRange
		want   string // the range the FloatingIP ends in; "" when it waits in a-full
	}{
		{"another network has room", []*v1.FloatingIPRange{rng("b-vlan20", "10.2.0.0/24", "vlan20")}, ""},
		{"a range that names no network has room", []*v1.FloatingIPRange{rng("b-any", "10.3.0.0/24", "")}, ""},
		{"its own network has room", []*v1.FloatingIPRange{rng("b-vlan20", "10.2.0.0/24", "vlan20"), rng("c-vlan10", "10.4.0.0/24", "vlan10")}, "c-vlan10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ranges := fakes.NewRanges(append([]*v1.FloatingIPRange{rng("a-full", "10.1.0.7/32", "vlan10")}, tc.others...)...)
			fips := fakes.NewFloatingIPs()
			h := &handler{ctx: t.Context(), fips: fips, ranges: ranges.Cache(), clusters: guestClusters("c-m-1"), alloc: allocation.NewManager(allocation.Deps{
				Allocations: fakes.NewAllocations(), Ranges: ranges,
			}, allocation.Options{}), metrics: metrics.New(), recorder: record.NewFakeRecorder(100)}
			if _, _, err := h.alloc.Claim(t.Context(), "a-full", allocation.Claimant{Owner: ipam.Owner{Namespace: "c-m-0", Name: "first", UID: "first-uid"}}, netip.Addr{}, false); err != nil {
				t.Fatal(err)
			}
			f := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: "demo-kubevip", Namespace: "c-m-1", UID: "demo-uid", Finalizers: []string{v1.FloatingIPFinalizer},
				Annotations: map[string]string{v1.AnnotationFloatingIPRange: "a-full"}}}
			fips.Add(f)
			if _, err := h.OnFloatingIPChange("c-m-1/demo-kubevip", f); err != nil {
				t.Fatal(err)
			}
			last := fips.Written[len(fips.Written)-1]
			if tc.want == "" {
				if len(fips.Updated) != 0 || last.Annotations[v1.AnnotationFloatingIPRange] != "a-full" || last.Status.IPAddress != "" {
					t.Errorf("moved to %s, holds %q; want it waiting in a-full", last.Annotations[v1.AnnotationFloatingIPRange], last.Status.IPAddress)
				}
				if c, _ := v1.GetCondition(last.Status.Conditions, v1.Allocated); c.Reason != v1.ReasonRangeExhausted {
					t.Errorf("Allocated = %s %q; want %s", c.Reason, c.Message, v1.ReasonRangeExhausted)
				}
				return
			}
			if last.Status.Range != tc.want || last.Annotations[v1.AnnotationFloatingIPRange] != tc.want {
				t.Errorf("holds %q in %q; want an address of %s", last.Status.IPAddress, last.Status.Range, tc.want)
			}
		})
	}
}
