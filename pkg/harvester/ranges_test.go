package harvester

import (
	"strings"
	"testing"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

func TestSelectRange(t *testing.T) {
	t.Parallel()
	vlan10 := Network{Namespace: "default", Name: "vlan10"}
	ranges := []Range{
		{Name: "zeta", HarvesterCluster: "harv1", HarvesterNetwork: "vlan20"},
		{Name: "alpha", HarvesterCluster: "harv1", HarvesterNetwork: "vlan30"},
		{Name: "mid", HarvesterCluster: "harv1", HarvesterNetwork: "vlan10"},
		{Name: "beta", HarvesterCluster: "harv2", HarvesterNetwork: "vlan10"},
		{Name: "aaa", HarvesterCluster: "", HarvesterNetwork: "vlan10"},
	}
	tests := []struct {
		name    string
		ranges  []Range
		cluster string
		network Network
		want    Selection
		ok      bool
	}{
		{name: "network matches", ranges: ranges, cluster: "harv1", network: vlan10,
			want: Selection{Range: "mid", NetworkMatched: true, Candidates: 3}, ok: true},
		{name: "network given bare", ranges: ranges, cluster: "harv1", network: Network{Name: "vlan20"},
			want: Selection{Range: "zeta", NetworkMatched: true, Candidates: 3}, ok: true},
		{name: "no network matches: first by name", ranges: ranges, cluster: "harv1", network: Network{Namespace: "x", Name: "vlan99"},
			want: Selection{Range: "alpha", Candidates: 3}, ok: true},
		{name: "the other Harvester cluster", ranges: ranges, cluster: "harv2", network: Network{Name: "vlan77"},
			want: Selection{Range: "beta", Candidates: 1}, ok: true},
		{name: "no range of the Harvester cluster", ranges: ranges, cluster: "harv3", network: vlan10},
		{name: "empty Harvester cluster never matches unannotated ranges", ranges: ranges, cluster: "", network: vlan10},
		{name: "no ranges", cluster: "harv1", network: vlan10},
		{name: "two ranges name the network: first by name", cluster: "h", network: vlan10, ranges: []Range{
			{Name: "b", HarvesterCluster: "h", HarvesterNetwork: "default/vlan10"},
			{Name: "a", HarvesterCluster: "h", HarvesterNetwork: "vlan10"},
		}, want: Selection{Range: "a", NetworkMatched: true, Candidates: 2}, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := SelectRange(tt.ranges, tt.cluster, tt.network)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("SelectRange = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
			// The answer never depends on the order the cache lists ranges in.
			reversed := make([]Range, len(tt.ranges))
			for i, r := range tt.ranges {
				reversed[len(tt.ranges)-1-i] = r
			}
			if again, _ := SelectRange(reversed, tt.cluster, tt.network); again != got {
				t.Errorf("in reverse order SelectRange = %+v, want %+v", again, got)
			}
		})
	}
}

func TestSelectFamilyRange(t *testing.T) {
	t.Parallel()
	vlan10 := Network{Namespace: "default", Name: "vlan10"}
	ranges := []Range{
		{Name: "v4-b", HarvesterCluster: "harv1", HarvesterNetwork: "vlan10", Family: IPv4},
		{Name: "v4-a", HarvesterCluster: "harv1", HarvesterNetwork: "default/vlan10", Family: IPv4},
		{Name: "v6", HarvesterCluster: " harv1 ", HarvesterNetwork: "vlan10", Family: IPv6},
		{Name: "a-v6-other-network", HarvesterCluster: "harv1", HarvesterNetwork: "vlan20", Family: IPv6},
		{Name: "a-v6-other-cluster", HarvesterCluster: "harv2", HarvesterNetwork: "vlan10", Family: IPv6},
		{Name: "a-invalid", HarvesterCluster: "harv1", HarvesterNetwork: "vlan10"},
		{Name: "a-v6-harv3-unannotated", HarvesterCluster: "harv3", Family: IPv6},
		{Name: "a-v4-harv3", HarvesterCluster: "harv3", HarvesterNetwork: "vlan10", Family: IPv4},
		{Name: "a-v6-unowned", HarvesterNetwork: "vlan10", Family: IPv6},
	}
	tests := []struct {
		name    string
		cluster string
		network Network
		family  Family
		want    string
	}{
		{name: "IPv4 on the network: first by name", cluster: "harv1", network: vlan10, family: IPv4, want: "v4-a"},
		{name: "IPv6 on the network", cluster: "harv1", network: vlan10, family: IPv6, want: "v6"},
		{name: "IPv6 on a network given bare", cluster: "harv1", network: Network{Name: "vlan20"}, family: IPv6, want: "a-v6-other-network"},
		{name: "no IPv4 range on that network", cluster: "harv1", network: Network{Name: "vlan20"}, family: IPv4},
		{name: "no fallback to a range naming no network", cluster: "harv3", network: vlan10, family: IPv6},
		{name: "the other Harvester cluster", cluster: "harv2", network: vlan10, family: IPv6, want: "a-v6-other-cluster"},
		{name: "no Harvester cluster", cluster: "", network: vlan10, family: IPv6},
		{name: "no family", cluster: "harv1", network: vlan10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := SelectFamilyRange(ranges, tt.cluster, tt.network, tt.family)
			if got != tt.want || ok != (tt.want != "") {
				t.Fatalf("SelectFamilyRange = %q, %v; want %q", got, ok, tt.want)
			}
			reversed := make([]Range, len(ranges))
			for i, r := range ranges {
				reversed[len(ranges)-1-i] = r
			}
			if again, _ := SelectFamilyRange(reversed, tt.cluster, tt.network, tt.family); again != got {
				t.Errorf("in reverse order SelectFamilyRange = %q, want %q", again, got)
			}
		})
	}
	// SelectRange does not look at families: a dual-stack cluster's first FloatingIP comes from the
	// range a single-stack cluster's would.
	if sel, _ := SelectRange(ranges, "harv1", vlan10); sel.Range != "a-invalid" {
		t.Errorf("SelectRange = %+v; want a-invalid, the first by name on the network whatever its family", sel)
	}
}

func TestNoRangeForFamily(t *testing.T) {
	t.Parallel()
	p := NoRangeForFamily("harv1", Network{Namespace: "default", Name: "vlan10"}, IPv6)
	if p.Reason != v1.ReasonNoRangeForFamily || !strings.Contains(p.Message, "no IPv6 FloatingIPRange of Harvester cluster harv1 is annotated harvesterNetworkName=default/vlan10") {
		t.Errorf("NoRangeForFamily = %v", p)
	}
	if long := NoRangeForFamily(strings.Repeat("h", 5000), Network{Name: strings.Repeat("n", 5000)}, IPv4); len(long.Message) > 600 {
		t.Errorf("a %d-character message", len(long.Message))
	}
}

func TestSelectionExplain(t *testing.T) {
	t.Parallel()
	n := Network{Namespace: "default", Name: "vlan10"}
	if p := (Selection{}).Explain(false, "harv1", n); p == nil || p.Reason != v1.ReasonNoMatchingRange {
		t.Errorf("no range: %v", p)
	}
	if p := (Selection{Range: "a", Candidates: 2}).Explain(true, "harv1", n); p == nil || p.Reason != v1.ReasonRangeNetworkMismatch {
		t.Errorf("mismatch: %v", p)
	}
	if p := (Selection{Range: "a", NetworkMatched: true, Candidates: 1}).Explain(true, "harv1", n); p != nil {
		t.Errorf("match: %v", p)
	}
}
