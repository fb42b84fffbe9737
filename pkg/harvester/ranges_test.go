package harvester

import "testing"

func TestSelectRange(t *testing.T) {
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

func TestSelectionExplain(t *testing.T) {
	n := Network{Namespace: "default", Name: "vlan10"}
	if p := (Selection{}).Explain(false, "harv1", n); p == nil || p.Reason != ReasonNoMatchingRange {
		t.Errorf("no range: %v", p)
	}
	if p := (Selection{Range: "a", Candidates: 2}).Explain(true, "harv1", n); p == nil || p.Reason != ReasonRangeNetworkMismatch {
		t.Errorf("mismatch: %v", p)
	}
	if p := (Selection{Range: "a", NetworkMatched: true, Candidates: 1}).Explain(true, "harv1", n); p != nil {
		t.Errorf("match: %v", p)
	}
}
