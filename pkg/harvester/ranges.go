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

// Selection is where a guest cluster's FloatingIP is allocated from.
type Selection struct {
	// NetworkMatched is true when ranges of the Harvester cluster name the network: which of them
	// the FloatingIP takes is the allocation's to choose (allocation.Manager.Choose), by priority,
	// clusterSelector and room, as for every range of a network. Range is then empty.
	NetworkMatched bool
	// Range is, when the network did not match, the range taken instead: the first by name of
	// those that name no network (or may name it); empty when none may be.
	Range string
	// Candidates is how many ranges belong to the Harvester cluster.
	Candidates int
	// Named is, when the network did not match, the network the range taken names, if any.
	Named string
	// Elsewhere are, when no range was chosen, the ranges of the Harvester cluster, all of them
	// on other networks, by name.
	Elsewhere []Range
}

// SelectRange finds where a guest cluster's FloatingIP comes from, as the original operator did:
// among the ranges of the Harvester cluster, those whose network matches (NetworkMatched; the
// allocation chooses among them); failing that, the first by name of those that name no network
// (the original's ranges had no network annotation), or that name one a network given bare may
// be (Differs). A range that surely names another network is never taken: its addresses are of
// no use to kube-vip on the guest's network. Name order makes the answer the same on every
// replica and after every restart. ok is false when no range may be taken: none belongs to the
// Harvester cluster (Candidates 0), or all of them name other networks (Elsewhere lists them).
func SelectRange(ranges []Range, harvesterCluster string, network Network) (sel Selection, ok bool) {
	var unnamed Range
	var elsewhere []Range
	for _, r := range ranges {
		if !r.of(harvesterCluster) {
			continue
		}
		sel.Candidates++
		switch {
		case network.Matches(r.HarvesterNetwork):
			sel.NetworkMatched = true
		case !network.Differs(r.HarvesterNetwork):
			// Names no network, or names one the network given bare may be.
			if unnamed.Name == "" || r.Name < unnamed.Name {
				unnamed = r
			}
		default:
			elsewhere = append(elsewhere, r)
		}
	}
	switch {
	case sel.NetworkMatched:
	case unnamed.Name != "":
		sel.Range, sel.Named = unnamed.Name, strings.TrimSpace(unnamed.HarvesterNetwork)
	default:
		sort.Slice(elsewhere, func(i, j int) bool { return elsewhere[i].Name < elsewhere[j].Name })
		sel.Elsewhere = elsewhere
		return sel, false
	}
	return sel, true
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
	cluster, net := redact.Shorten(harvesterCluster, MaxQuoted), redact.Shorten(network.String(), MaxQuoted)
	switch {
	case !ok && s.Candidates == 0:
		return problem.New(v1.ReasonNoMatchingRange,
			"no FloatingIPRange is annotated harvesterClusterName=%s; the FloatingIP is created as soon as one is", cluster)
	case !ok:
		return problem.New(v1.ReasonNoRangeForNetwork,
			"no FloatingIPRange of Harvester cluster %s is annotated harvesterNetworkName=%s, and none names no network: "+
				"its ranges are of other networks (%s), whose addresses kube-vip cannot use on this one, so none is taken. "+
				"Create a FloatingIPRange annotated harvesterClusterName=%s and harvesterNetworkName=%s with free addresses of that network; "+
				"the FloatingIP is created as soon as it exists",
			cluster, net, onNetworks(s.Elsewhere), cluster, net)
	case !s.NetworkMatched && s.Named != "":
		return problem.New(v1.ReasonRangeNetworkMismatch,
			"none of the %s of Harvester cluster %s is annotated harvesterNetworkName=%s; using %s, annotated harvesterNetworkName=%s, "+
				"which the network, named without its namespace, may be",
			plural(s.Candidates, "FloatingIPRange"), cluster, net, s.Range, redact.Shorten(s.Named, MaxQuoted))
	case !s.NetworkMatched:
		return problem.New(v1.ReasonRangeNetworkMismatch,
			"none of the %s of Harvester cluster %s is annotated harvesterNetworkName=%s; using %s, the first by name of those that name no network",
			plural(s.Candidates, "FloatingIPRange"), cluster, net, s.Range)
	}
	return nil
}

// namedRanges bounds how many ranges a message names.
const namedRanges = 3

// onNetworks names ranges with their networks: "a on vlan20, b on default/vlan30 and 2 more".
func onNetworks(ranges []Range) string {
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = r.Name + " on " + redact.Shorten(strings.TrimSpace(r.HarvesterNetwork), MaxQuoted)
	}
	return redact.Names(parts, namedRanges)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
