package discovery

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

// cidrRange is the range name of cidr.
func cidrRange(name, cidr string) *v1.FloatingIPRange {
	return &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.FloatingIPRangeSpec{IPRange: cidr}}
}

// fip is a FloatingIP of namespace c-m-demo: annotated for cluster (none when empty), from
// range rng, asking for or holding addr.
func fip(name, cluster, rng, spec, status string) *v1.FloatingIP {
	f := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "c-m-demo", Annotations: map[string]string{}}}
	if cluster != "" {
		f.Annotations[v1.AnnotationClusterName] = cluster
	}
	if rng != "" {
		f.Annotations[v1.AnnotationFloatingIPRange] = rng
	}
	f.Spec.IPAddress, f.Status.IPAddress = spec, status
	return f
}

func TestFloatingIPName(t *testing.T) {
	for second, want := range map[harvester.Family]string{0: "demo-kubevip", harvester.IPv4: "demo-kubevip-ipv4", harvester.IPv6: "demo-kubevip-ipv6"} {
		if got := floatingIPName("demo", second); got != want {
			t.Errorf("floatingIPName(demo, %v) = %s, want %s", second, got, want)
		}
	}
}

// TestFamiliesHeld: a dual-stack cluster's FloatingIPs count for the family of their range's CIDR,
// else of their address; discovery's own names count without the annotation, other FloatingIPs
// with it only.
func TestFamiliesHeld(t *testing.T) {
	ranges := fakes.NewRanges(cidrRange("v4", "10.0.0.0/24"), cidrRange("v6", "fd00::/64"), cidrRange("broken", "not a cidr"))
	tests := []struct {
		name    string
		fips    []*v1.FloatingIP
		v4, v6  string
		unknown string
	}{
		{name: "none"},
		{name: "the first, of IPv4", fips: []*v1.FloatingIP{fip("demo-kubevip", "demo", "v4", "", "")}, v4: "demo-kubevip"},
		{name: "the first, of IPv6", fips: []*v1.FloatingIP{fip("demo-kubevip", "demo", "v6", "", "")}, v6: "demo-kubevip"},
		{name: "both", fips: []*v1.FloatingIP{fip("demo-kubevip", "demo", "v6", "", ""), fip("demo-kubevip-ipv4", "demo", "v4", "", "")},
			v4: "demo-kubevip-ipv4", v6: "demo-kubevip"},
		{name: "discovery's name without the annotation", fips: []*v1.FloatingIP{fip("demo-kubevip-ipv6", "", "v6", "", "")}, v6: "demo-kubevip-ipv6"},
		{name: "made by hand, by its range", fips: []*v1.FloatingIP{fip("by-hand", "demo", "v6", "", "")}, v6: "by-hand"},
		{name: "made by hand, by its address when its range is gone", fips: []*v1.FloatingIP{fip("by-hand", "demo", "gone", "", "10.0.0.7")}, v4: "by-hand"},
		{name: "made by hand, by the address asked for", fips: []*v1.FloatingIP{fip("by-hand", "demo", "broken", "fd00::7", "")}, v6: "by-hand"},
		{name: "of unknown family", fips: []*v1.FloatingIP{fip("by-hand", "demo", "gone", "", "")}, unknown: "by-hand"},
		{name: "another cluster's, or unannotated", fips: []*v1.FloatingIP{fip("other-kubevip", "other", "v4", "", ""), fip("stray", "", "v6", "", "")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &handler{fips: fakes.NewFloatingIPs(tt.fips...), ranges: ranges, prov: fakes.NewProvisioningClusters()}
			h.addIndexers()
			held, err := h.familiesHeld("c-m-demo", "demo")
			if err != nil {
				t.Fatal(err)
			}
			if held.byFamily[harvester.IPv4] != tt.v4 || held.byFamily[harvester.IPv6] != tt.v6 || held.unknown != tt.unknown {
				t.Errorf("familiesHeld = %v, unknown %q; want IPv4 %q, IPv6 %q, unknown %q", held.byFamily, held.unknown, tt.v4, tt.v6, tt.unknown)
			}
			if held.complete() != (tt.v4 != "" && tt.v6 != "") {
				t.Errorf("complete = %v", held.complete())
			}
		})
	}
}
