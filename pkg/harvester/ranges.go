package harvester

import (
	"fmt"
	"sort"
	"strings"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// Range is what range selection needs of a FloatingIPRange: its name, its harvesterClusterName
// and harvesterNetworkName annotations, and the family of its iprange (FamilyOfCIDR).
type Range struct {
	Name             string
	HarvesterCluster string
	HarvesterNetwork string
	Family           Family
}

// of reports whether the range belongs to the Harvester cluster; no range belongs to none.
func (r Range) of(harvesterCluster string) bool {
	return harvesterCluster != "" && strings.TrimSpace(r.HarvesterCluster) == harvesterCluster
}

// Selection is the range a guest cluster's FloatingIP is allocated from.
type Selection struct {
	Range string
	// NetworkMatched is false when no range of the Harvester cluster names the network and the
	// first by name was taken instead.
	NetworkMatched bool
	// Candidates is how many ranges belong to the Harvester cluster.
	Candidates int
}

// SelectRange picks the range as the original operator did: among the ranges of the Harvester
// cluster, the one whose network matches; failing that, the first of them by name. Name order
// makes the answer the same on every replica and after every restart; ok is false when no range
// belongs to the Harvester cluster.
func SelectRange(ranges []Range, harvesterCluster string, network Network) (sel Selection, ok bool) {
	var names []string
	matching := ""
	for _, r := range ranges {
		if !r.of(harvesterCluster) {
			continue
		}
		names = append(names, r.Name)
		if network.Matches(r.HarvesterNetwork) && (matching == "" || r.Name < matching) {
			matching = r.Name
		}
	}
	if len(names) == 0 {
		return Selection{}, false
	}
	if matching != "" {
		return Selection{Range: matching, NetworkMatched: true, Candidates: len(names)}, true
	}
	sort.Strings(names)
	return Selection{Range: names[0], Candidates: len(names)}, true
}

// SelectFamilyRange picks the range of the second address of a dual-stack guest cluster, of
// family f: among the ranges of the Harvester cluster that name the network and whose iprange is
// of that family, the first by name. Unlike SelectRange it takes no range of another network: the
// first-by-name fallback is there for the original operator's ranges, which named no network and
// had no dual-stack, and an address off the guest's network is of no use to kube-vip.
func SelectFamilyRange(ranges []Range, harvesterCluster string, network Network, f Family) (string, bool) {
	best := ""
	for _, r := range ranges {
		if f != 0 && r.Family == f && r.of(harvesterCluster) && network.Matches(r.HarvesterNetwork) && (best == "" || r.Name < best) {
			best = r.Name
		}
	}
	return best, best != ""
}

// NoRangeForFamily is the problem of a dual-stack guest cluster whose network has no range of
// family f: the FloatingIPs of the other family are made, this one once such a range exists.
func NoRangeForFamily(harvesterCluster string, network Network, f Family) *problem.Problem {
	return problem.New(v1.ReasonNoRangeForFamily,
		"the cluster is dual-stack (cluster-cidr and service-cidr list IPv4 and IPv6), but no %s FloatingIPRange of Harvester cluster %s is annotated harvesterNetworkName=%s; its %s FloatingIP is created as soon as one is",
		f, redact.Shorten(harvesterCluster, MaxQuoted), redact.Shorten(network.String(), MaxQuoted), f)
}

// Explain says, for the Events, why no range was found or why the one chosen does not name the
// network; nil when the selection needs no word.
func (s Selection) Explain(ok bool, harvesterCluster string, network Network) *problem.Problem {
	switch {
	case !ok:
		return problem.New(v1.ReasonNoMatchingRange,
			"no FloatingIPRange is annotated harvesterClusterName=%s; the FloatingIP is created as soon as one is", redact.Shorten(harvesterCluster, MaxQuoted))
	case !s.NetworkMatched:
		return problem.New(v1.ReasonRangeNetworkMismatch,
			"none of the %s of Harvester cluster %s is annotated harvesterNetworkName=%s; using %s, the first by name",
			plural(s.Candidates, "FloatingIPRange"), redact.Shorten(harvesterCluster, MaxQuoted), redact.Shorten(network.Name, MaxQuoted), s.Range)
	}
	return nil
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
