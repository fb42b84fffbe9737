package harvester

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kubefip/kube-fip-operator/pkg/problem"
)

// Range is what range selection needs of a FloatingIPRange: its name and its harvesterClusterName
// and harvesterNetworkName annotations.
type Range struct {
	Name             string
	HarvesterCluster string
	HarvesterNetwork string
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
		if strings.TrimSpace(r.HarvesterCluster) != harvesterCluster || harvesterCluster == "" {
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

// Explain says, for the Events, why no range was found or why the one chosen does not name the
// network; nil when the selection needs no word.
func (s Selection) Explain(ok bool, harvesterCluster string, network Network) *problem.Problem {
	switch {
	case !ok:
		return problem.New(ReasonNoMatchingRange,
			"no FloatingIPRange is annotated harvesterClusterName=%s; the FloatingIP is created as soon as one is", clip(harvesterCluster))
	case !s.NetworkMatched:
		return problem.New(ReasonRangeNetworkMismatch,
			"none of the %s of Harvester cluster %s is annotated harvesterNetworkName=%s; using %s, the first by name",
			plural(s.Candidates, "FloatingIPRange"), clip(harvesterCluster), clip(network.Name), s.Range)
	}
	return nil
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
