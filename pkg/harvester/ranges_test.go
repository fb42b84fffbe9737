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
		{Name: "z-unnamed", HarvesterCluster: "harv3"},
		{Name: "y-blank", HarvesterCluster: "harv3", HarvesterNetwork: "  "},
		{Name: "a-other", HarvesterCluster: "harv3", HarvesterNetwork: "vlan20"},
		{Name: "other-ns", HarvesterCluster: "harv4", HarvesterNetwork: "other/vlan10"},
	}
	tests := []struct {
		name      string
		ranges    []Range
		cluster   string
		network   Network
		want      string
		matched   bool
		named     string
		ok        bool
		elsewhere []string
	}{
		{name: "network matches", ranges: ranges, cluster: "harv1", network: vlan10, matched: true, ok: true},
		{name: "network given bare", ranges: ranges, cluster: "harv1", network: Network{Name: "vlan20"}, matched: true, ok: true},
		{name: "every range names another network: none", ranges: ranges, cluster: "harv1", network: Network{Namespace: "x", Name: "vlan99"},
			elsewhere: []string{"alpha", "mid", "zeta"}},
		{name: "the other Harvester cluster's only range is of another network", ranges: ranges, cluster: "harv2", network: Network{Name: "vlan77"},
			elsewhere: []string{"beta"}},
		{name: "no network matches: the first by name of those that name none", ranges: ranges, cluster: "harv3", network: vlan10,
			want: "y-blank", ok: true},
		{name: "a range of the network wins over those that name none", ranges: ranges, cluster: "harv3", network: Network{Name: "vlan20"},
			matched: true, ok: true},
		{name: "a bare network may be namespace/name", ranges: ranges, cluster: "harv4", network: Network{Name: "vlan10"},
			want: "other-ns", named: "other/vlan10", ok: true},
		{name: "a namespaced network is not another namespace's", ranges: ranges, cluster: "harv4", network: vlan10,
			elsewhere: []string{"other-ns"}},
		{name: "no range of the Harvester cluster", ranges: ranges, cluster: "harv9", network: vlan10},
		{name: "empty Harvester cluster never matches unannotated ranges", ranges: ranges, cluster: "", network: vlan10},
		{name: "no ranges", cluster: "harv1", network: vlan10},
		{name: "a range of another family still matches the network", cluster: "h", network: vlan10, ranges: []Range{
			{Name: "b", HarvesterCluster: "h", HarvesterNetwork: "default/vlan10", Family: IPv6},
		}, matched: true, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			candidates := 0
			for _, r := range tt.ranges {
				if r.of(tt.cluster) {
					candidates++
				}
			}
			check := func(in []Range) Selection {
				t.Helper()
				got, ok := SelectRange(in, tt.cluster, tt.network)
				var elsewhere []string
				for _, r := range got.Elsewhere {
					elsewhere = append(elsewhere, r.Name)
				}
				if ok != tt.ok || got.Range != tt.want || got.NetworkMatched != tt.matched || got.Named != tt.named ||
					got.Candidates != candidates || strings.Join(elsewhere, ",") != strings.Join(tt.elsewhere, ",") {
					t.Fatalf("SelectRange = %+v, %v; want range %q, matched %v, named %q, %d candidates, elsewhere %v, %v",
						got, ok, tt.want, tt.matched, tt.named, candidates, tt.elsewhere, tt.ok)
				}
				return got
			}
			check(tt.ranges)
			// The answer never depends on the order the cache lists ranges in.
			reversed := make([]Range, len(tt.ranges))
			for i, r := range tt.ranges {
				reversed[len(tt.ranges)-1-i] = r
			}
			check(reversed)
		})
	}
}

func TestNetworkDiffers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		network    Network
		annotation string
		want       bool
	}{
		{Network{Namespace: "default", Name: "vlan10"}, "", false},
		{Network{Namespace: "default", Name: "vlan10"}, " ", false},
		{Network{Namespace: "default", Name: "vlan10"}, "vlan10", false},
		{Network{Namespace: "default", Name: "vlan10"}, " default/vlan10 ", false},
		{Network{Namespace: "default", Name: "vlan10"}, "vlan20", true},
		{Network{Namespace: "default", Name: "vlan10"}, "other/vlan10", true},
		{Network{Name: "vlan10"}, "other/vlan10", false},
		{Network{Name: "vlan10"}, "other/vlan20", true},
		{Network{Name: "vlan10"}, "vlan1", true},
	} {
		if got := tc.network.Differs(tc.annotation); got != tc.want {
			t.Errorf("%s.Differs(%q) = %v, want %v", tc.network, tc.annotation, got, tc.want)
		}
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
	elsewhere := Selection{Candidates: 5, Elsewhere: []Range{
		{Name: "a", HarvesterNetwork: "vlan20"}, {Name: "b", HarvesterNetwork: "vlan30"}, {Name: "c", HarvesterNetwork: "default/vlan40"},
		{Name: "d", HarvesterNetwork: "vlan50"}, {Name: "e", HarvesterNetwork: "vlan60"}}}
	p := elsewhere.Explain(false, "harv1", n)
	for _, want := range []string{"a on vlan20, b on vlan30, c on default/vlan40 and 2 more",
		"annotated harvesterClusterName=harv1 and harvesterNetworkName=default/vlan10"} {
		if p == nil || p.Reason != v1.ReasonNoRangeForNetwork || !strings.Contains(p.Message, want) {
			t.Errorf("all of other networks: %v; want %s saying %q", p, v1.ReasonNoRangeForNetwork, want)
		}
	}
	if p := (Selection{Range: "a", Candidates: 2}).Explain(true, "harv1", n); p == nil || p.Reason != v1.ReasonRangeNetworkMismatch ||
		!strings.Contains(p.Message, "using a, the first by name of those that name no network") {
		t.Errorf("a range that names no network: %v", p)
	}
	if p := (Selection{Range: "a", Candidates: 1, Named: "other/vlan10"}).Explain(true, "harv1", Network{Name: "vlan10"}); p == nil ||
		p.Reason != v1.ReasonRangeNetworkMismatch || !strings.Contains(p.Message, "using a, annotated harvesterNetworkName=other/vlan10") {
		t.Errorf("a range the bare network may be: %v", p)
	}
	if p := (Selection{Range: "a", NetworkMatched: true, Candidates: 1}).Explain(true, "harv1", n); p != nil {
		t.Errorf("match: %v", p)
	}
	long := Selection{Candidates: 1, Elsewhere: []Range{{Name: "a", HarvesterNetwork: strings.Repeat("n", 5000)}}}
	if p := long.Explain(false, strings.Repeat("h", 5000), Network{Name: strings.Repeat("m", 5000)}); len(p.Message) > 1200 {
		t.Errorf("a %d-character message", len(p.Message))
	}
}
