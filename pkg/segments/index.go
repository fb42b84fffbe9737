package segments

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// index makes a View's lookups cheap: a network by reference or bare name, and a guest's
// interfaces, are a map lookup, and the claims overlapping a run are found by binary search, per
// segment and family.
type index struct {
	byRef   map[string]int
	byName  map[string][]int
	byGuest map[string][]int
	segs    map[Segment]*[2]family
}

// family holds one segment's claims of one family (0 IPv4, 1 IPv6), as indices into View.Claims,
// each list in the order of First. Single addresses (a VM's, a DHCP server's) are most claims and
// are found exactly by binary search; runs (pools) are few, and reach[i], the highest Last of
// runs[0..i], ends the walk back from the query's end at the first run no earlier run can reach
// past.
type family struct {
	points []int
	runs   []int
	reach  []netip.Addr
}

func familyOf(a netip.Addr) int {
	if a.Is4() {
		return 0
	}
	return 1
}

func compareSegments(a, b Segment) int {
	return cmp.Or(strings.Compare(a.Cluster, b.Cluster), strings.Compare(a.ClusterNetwork, b.ClusterNetwork),
		cmp.Compare(a.VLAN, b.VLAN), strings.Compare(a.Isolated, b.Isolated))
}

func compareClaims(a, b Claim) int {
	return cmp.Or(compareSegments(a.Segment, b.Segment), a.First.Compare(b.First), a.Last.Compare(b.Last),
		strings.Compare(string(a.Kind), string(b.Kind)), strings.Compare(a.Object, b.Object), strings.Compare(a.Guest, b.Guest))
}

// wellFormed reports whether a claim is a run of one family; Read makes no other, and one put in
// a View by hand that is not is never found.
func wellFormed(c Claim) bool {
	return c.First.IsValid() && c.Last.IsValid() && c.First.Is4() == c.Last.Is4() && !c.Last.Less(c.First)
}

// Reindex sorts the view (networks by namespace and name, claims by segment and first address,
// each once, interfaces by VM and network) and builds what NetworkNamed and Overlapping look up. Read does
// it; a View built or changed by hand needs it again, and until then is searched one by one.
func (v *View) Reindex() {
	slices.SortFunc(v.Networks, func(a, b Network) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	slices.SortFunc(v.Claims, compareClaims)
	// A page answered twice, or an address a VMI lists twice, is one claim.
	v.Claims = slices.Compact(v.Claims)
	slices.SortFunc(v.Interfaces, func(a, b Interface) int {
		return cmp.Or(strings.Compare(a.VM, b.VM), strings.Compare(a.Network, b.Network), strings.Compare(a.InterfaceName, b.InterfaceName))
	})
	idx := &index{byRef: map[string]int{}, byName: map[string][]int{}, byGuest: map[string][]int{}, segs: map[Segment]*[2]family{}}
	for i, n := range v.Networks {
		idx.byRef[n.String()] = i
		idx.byName[n.Name] = append(idx.byName[n.Name], i)
	}
	for i, in := range v.Interfaces {
		if in.Guest != "" {
			idx.byGuest[in.Guest] = append(idx.byGuest[in.Guest], i)
		}
	}
	for i, c := range v.Claims {
		if !wellFormed(c) {
			continue
		}
		fams := idx.segs[c.Segment]
		if fams == nil {
			fams = &[2]family{}
			idx.segs[c.Segment] = fams
		}
		f := &fams[familyOf(c.First)]
		if c.First == c.Last {
			f.points = append(f.points, i)
			continue
		}
		reach := c.Last
		if n := len(f.reach); n > 0 && reach.Less(f.reach[n-1]) {
			reach = f.reach[n-1]
		}
		f.runs = append(f.runs, i)
		f.reach = append(f.reach, reach)
	}
	v.idx = idx
}

// InterfacesOf are the interfaces of the VMs of guest cluster guest (not ""), in the view's order.
func (v *View) InterfacesOf(guest string) []Interface {
	var out []Interface
	if v.idx == nil {
		for _, in := range v.Interfaces {
			if in.Guest == guest && guest != "" {
				out = append(out, in)
			}
		}
		return out
	}
	for _, i := range v.idx.byGuest[guest] {
		out = append(out, v.Interfaces[i])
	}
	return out
}

// NetworkNamed resolves a range's harvesterNetworkName as written: "namespace/name", or a bare
// "name" that is the name of exactly one NAD. When it is not resolved, why says so for a message.
func (v *View) NetworkNamed(name string) (Network, bool, string) {
	s := strings.TrimSpace(name)
	quoted := redact.Quote(s, redact.MaxValue)
	if ns, n, qualified := strings.Cut(s, "/"); qualified {
		if !validNames(ns, n) {
			return Network{}, false, fmt.Sprintf("%s is not namespace/name of a VM network", quoted)
		}
		if found := v.networksWhere(s, ""); len(found) == 1 {
			return v.Networks[found[0]], true, ""
		}
		return Network{}, false, fmt.Sprintf("Harvester cluster %s has no VM network %s%s", v.Cluster, quoted, v.incomplete())
	}
	if !validNames("", s) {
		return Network{}, false, fmt.Sprintf("%s is not the name of a VM network", quoted)
	}
	found := v.networksWhere("", s)
	switch len(found) {
	case 0:
		return Network{}, false, fmt.Sprintf("Harvester cluster %s has no VM network named %s%s", v.Cluster, quoted, v.incomplete())
	case 1:
		return v.Networks[found[0]], true, ""
	}
	names := make([]string, len(found))
	for i, f := range found {
		names[i] = v.Networks[f].String()
	}
	return Network{}, false, fmt.Sprintf("%s names %d VM networks of Harvester cluster %s (%s): write namespace/name",
		quoted, len(found), v.Cluster, redact.Names(names, 5))
}

// networksWhere are the indices of the networks whose "namespace/name" is ref, or whose name is
// name.
func (v *View) networksWhere(ref, name string) []int {
	if v.idx != nil {
		if ref != "" {
			if i, ok := v.idx.byRef[ref]; ok {
				return []int{i}
			}
			return nil
		}
		return v.idx.byName[name]
	}
	var out []int
	for i, n := range v.Networks {
		if (ref != "" && n.String() == ref) || (ref == "" && n.Name == name) {
			out = append(out, i)
		}
	}
	return out
}

// incomplete says, after a network was not found, why the read may have missed it.
func (v *View) incomplete() string {
	var why []string
	if slices.Contains(v.Absent, KindNetwork) {
		why = append(why, "it serves no NetworkAttachmentDefinitions")
	}
	if strings.Contains(v.Limited, whatOf(KindNetwork)) {
		why = append(why, "its NetworkAttachmentDefinitions were not all read")
	}
	if n := v.SkippedCount[KindNetwork]; n > 0 {
		why = append(why, fmt.Sprintf("%d of its NetworkAttachmentDefinitions could not be read", n))
	}
	if len(why) == 0 {
		return ""
	}
	return " (" + strings.Join(why, "; ") + ")"
}

// Overlapping returns the claims on seg, and those that may be on any segment, that hold any
// address in [first, last], sorted as View.Claims. A run of two families, or backwards, overlaps
// nothing.
func (v *View) Overlapping(seg Segment, first, last netip.Addr) []Claim {
	first, last = first.Unmap(), last.Unmap()
	if !wellFormed(Claim{First: first, Last: last}) {
		return nil
	}
	segs := []Segment{seg}
	if seg != (Segment{}) {
		segs = append(segs, Segment{})
	}
	var hits []int
	if v.idx == nil {
		for i, c := range v.Claims {
			if wellFormed(c) && slices.Contains(segs, c.Segment) && c.First.Is4() == first.Is4() && !last.Less(c.First) && !c.Last.Less(first) {
				hits = append(hits, i)
			}
		}
	} else {
		for _, s := range segs {
			if fams := v.idx.segs[s]; fams != nil {
				hits = fams[familyOf(first)].overlapping(v.Claims, first, last, hits)
			}
		}
	}
	out := make([]Claim, len(hits))
	for i, h := range hits {
		out[i] = v.Claims[h]
	}
	slices.SortFunc(out, compareClaims)
	return out
}

// overlapping appends to hits the indices of f's claims that hold an address in [first, last].
func (f *family) overlapping(claims []Claim, first, last netip.Addr, hits []int) []int {
	i := sort.Search(len(f.points), func(i int) bool { return !claims[f.points[i]].First.Less(first) })
	for ; i < len(f.points) && !last.Less(claims[f.points[i]].First); i++ {
		hits = append(hits, f.points[i])
	}
	end := sort.Search(len(f.runs), func(i int) bool { return last.Less(claims[f.runs[i]].First) })
	for j := end - 1; j >= 0 && !f.reach[j].Less(first); j-- {
		if !claims[f.runs[j]].Last.Less(first) {
			hits = append(hits, f.runs[j])
		}
	}
	return hits
}
