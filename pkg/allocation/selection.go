package allocation

import (
	"cmp"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// rangeOrder is selection order: the higher spec.priority first, then by name. Ranges without a
// priority (0) keep the original operator's order among themselves, the first by name.
func rangeOrder(a, b *v1.FloatingIPRange) int {
	if c := cmp.Compare(b.Spec.Priority, a.Spec.Priority); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// ClusterSelector is a range's spec.clusterSelector, parsed: none (every FloatingIP may take
// addresses), a selector, or an error that keeps the range from handing out anything. It is the
// one reading of the field: selection (Choose), claims, and the range's own status all go by it.
type ClusterSelector struct {
	spec     *metav1.LabelSelector
	selector labels.Selector
	err      error
}

// update returns s for spec, parsed again only when spec changed.
func (s ClusterSelector) update(spec *metav1.LabelSelector) ClusterSelector {
	if reflect.DeepEqual(s.spec, spec) && (s.selector != nil || s.err != nil || spec == nil) {
		return s
	}
	out := ClusterSelector{spec: spec.DeepCopy()}
	if spec != nil {
		out.selector, out.err = metav1.LabelSelectorAsSelector(spec)
	}
	return out
}

// ClusterSelectorOf is r's spec.clusterSelector, parsed.
func ClusterSelectorOf(r *v1.FloatingIPRange) ClusterSelector {
	return ClusterSelector{}.update(r.Spec.ClusterSelector)
}

// Set reports whether the range has a clusterSelector.
func (s ClusterSelector) Set() bool { return s.spec != nil }

// Err is why the selector does not parse; nil without one or when it does.
func (s ClusterSelector) Err() error { return s.err }

// Selects reports whether a valid selector matches a provisioning cluster's labels.
func (s ClusterSelector) Selects(clusterLabels map[string]string) bool {
	return s.spec != nil && s.err == nil && s.selector.Matches(labels.Set(clusterLabels))
}

// admits reports whether the selector lets a FloatingIP of c take a new address: always without a
// selector; with one, only a FloatingIP of a provisioning cluster whose labels it matches.
func (s ClusterSelector) admits(c Claimant) bool {
	return s.spec == nil || (c.Cluster.Name != "" && s.Selects(c.Labels))
}

// String is the selector as Kubernetes writes a label selector, for the range's list view and
// messages: empty without one, "<invalid>" when it does not parse (the range's Ready says why).
func (s ClusterSelector) String() string {
	switch {
	case s.spec == nil:
		return ""
	case s.err != nil:
		return "<invalid>"
	case s.selector.Empty():
		return "<every cluster>"
	}
	return redact.Shorten(s.selector.String(), redact.MaxValue)
}

// orderedRange is a range in selection order, with its parsed selector.
type orderedRange struct {
	r        *v1.FloatingIPRange
	selector ClusterSelector
	family   harvester.Family
}

// Want says where a guest cluster's address may come from: the ranges of Spaces (a Harvester
// cluster's VM network, as its ranges' annotations name it), of Family when set, for the claimant's
// FloatingIPs. The claimant's namespace is what a range's limit counts; its cluster and labels
// are what a range's selector judges.
type Want struct {
	Spaces   []v1.AddressSpace
	Family   harvester.Family
	Claimant Claimant
}

// Passed is a range that selection passed over, with the reason: RangeExhausted,
// ClusterLimitReached, ClusterNotSelected or RangeNotReady.
type Passed struct {
	Range, Reason string
}

// Choice is what Choose found, in selection order.
type Choice struct {
	// Range is the first range that can hand the claimant a new address now; empty when none can.
	Range string
	// First is the first range whose selector admits the claimant, whether it has room or not:
	// where a FloatingIP waits while no range has room. Empty when no range admits it, or when
	// Skipped ranges came first.
	First string
	// Passed are the ranges before Range (all of them when Range is empty) passed over, after the
	// Skipped ones.
	Passed []Passed
	// Skipped counts the ranges at the start of the order known to be full without a look: no
	// address of the space became free since a selection found them full.
	Skipped int
	// FirstSkipped is the first of them.
	FirstSkipped string
}

// Choose walks the ranges of w's spaces in selection order (rangeOrder) and returns the first that
// can give w's claimant a new address now: not being deleted, of w's family, its selector admits
// the claimant, the engine's view does not block it, the claimant's namespace is under its limit,
// and it has a free address. Each range is read in a lock section of its own. The ranges at the
// start of the order that an earlier selection found full are skipped while no address of the
// space became free since, so that filling a thousand ranges in order costs each claim a look at
// a few. A claim on the chosen range still decides for itself: a range that filled meanwhile
// refuses the claim, and the caller chooses again.
func (m *Manager) Choose(w Want) Choice {
	var out Choice
	order, key := m.ordered(w)
	start, freed := 0, uint64(0)
	if key != "" {
		freed = m.g.freedIn(w.Spaces[0].Hash())
		start = m.cursors.start(key, order.version, freed)
		// The skipped ranges count only when one of them could have served w: not when all are
		// of another family or being deleted, which must not make w wait in one of them.
		for _, o := range order.ranges[:start] {
			if o.r.DeletionTimestamp == nil && (w.Family == 0 || o.family == w.Family) {
				out.Skipped, out.FirstSkipped = start, o.r.Name
				break
			}
		}
	}
	// full is how far the ranges from start on are known to be full (or of no use to anyone
	// of w's family): where the next selection may start.
	full, counting := start, true
	defer func() {
		if key != "" {
			m.cursors.set(key, order.version, freed, full)
		}
	}()
	for _, o := range order.ranges[start:] {
		r := o.r
		if r.DeletionTimestamp != nil || (w.Family != 0 && o.family != w.Family) {
			if counting {
				full++
			}
			continue
		}
		if !o.selector.admits(w.Claimant) {
			counting = false
			out.Passed = append(out.Passed, Passed{Range: r.Name, Reason: v1.ReasonClusterNotSelected})
			continue
		}
		if out.First == "" && out.Skipped == 0 {
			out.First = r.Name
		}
		reason, outline := m.g.openFor(r, w.Claimant.Namespace)
		if reason == "" && m.problemOf(r, rangeView{outline: outline}) != nil {
			reason = v1.ReasonRangeNotReady
		}
		if counting && reason == v1.ReasonRangeExhausted {
			full++
		} else {
			counting = false
		}
		if reason != "" {
			out.Passed = append(out.Passed, Passed{Range: r.Name, Reason: reason})
			continue
		}
		out.Range = r.Name
		return out
	}
	if out.First == "" && out.Skipped > 0 {
		// Every range is full: the FloatingIP waits in the first, as without the skip.
		out.First = out.FirstSkipped
	}
	return out
}

// cursors remember, per space and family, how many ranges at the start of a space's selection
// order were full when no address had been freed in the space since (engine.freed).
type cursors struct {
	mu sync.Mutex
	at map[string]cursor
}

type cursor struct {
	version, freed uint64
	full           int
}

// start returns where a selection of key over order version may start, given the space's freed
// count now: 0 unless the last selection saw the same order and no address was freed since.
func (c *cursors) start(key string, version, freed uint64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at, ok := c.at[key]; ok && at.version == version && at.freed == freed {
		return at.full
	}
	return 0
}

// set records what a selection found, read against the freed count from before it looked: an
// address freed while it looked makes the next selection start over.
func (c *cursors) set(key string, version, freed uint64, full int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if full == 0 {
		delete(c.at, key)
		return
	}
	c.at[key] = cursor{version: version, freed: freed, full: full}
}

// Containing returns the first range of w's spaces, in selection order, whose CIDR holds addr
// and whose selector admits w's claimant: where a FloatingIP that asks for addr belongs.
func (m *Manager) Containing(w Want, addr netip.Addr) (string, bool) {
	order, _ := m.ordered(w)
	for _, o := range order.ranges {
		p, err := netip.ParsePrefix(strings.TrimSpace(o.r.Spec.IPRange))
		if err == nil && o.r.DeletionTimestamp == nil && p.Contains(addr) && o.selector.admits(w.Claimant) {
			return o.r.Name, true
		}
	}
	return "", false
}

// ordered returns the ranges of w's spaces in selection order, and the key of the selection cursor
// (empty when there is none: for several spaces, merged here).
func (m *Manager) ordered(w Want) (*spaceOrder, string) {
	var hashes []string
	for _, s := range w.Spaces {
		if h := s.Hash(); !slices.Contains(hashes, h) {
			hashes = append(hashes, h)
		}
	}
	x := m.rangeIndexNow()
	if len(hashes) == 1 && m.rangesFed {
		return x.order(hashes[0]), hashes[0] + "/" + w.Family.String()
	}
	merged := &spaceOrder{}
	for _, h := range hashes {
		merged.ranges = append(merged.ranges, x.order(h).ranges...)
	}
	slices.SortStableFunc(merged.ranges, func(a, b orderedRange) int { return rangeOrder(a.r, b.r) })
	return merged, ""
}

// Why says, for a condition or an Event, why the ranges before c.Range were passed over.
func (c Choice) Why() string {
	passed := Why(c.Passed)
	if c.Skipped == 0 {
		return passed
	}
	skipped := fmt.Sprintf("%s has no free address", c.FirstSkipped)
	if c.Skipped > 1 {
		skipped = fmt.Sprintf("the %d ranges from %s on have no free address", c.Skipped, c.FirstSkipped)
	}
	if passed == "" {
		return skipped
	}
	return skipped + "; " + passed
}

// Why says, for a condition or an Event, why the ranges passed over were: "a-small has no free
// address; b-prod does not select the cluster".
func Why(passed []Passed) string {
	var parts []string
	for i, p := range passed {
		if i == HoldersNamed {
			parts = append(parts, fmt.Sprintf("and %d more", len(passed)-i))
			break
		}
		parts = append(parts, p.Range+" "+whyPassed(p.Reason))
	}
	return strings.Join(parts, "; ")
}

func whyPassed(reason string) string {
	switch reason {
	case v1.ReasonRangeExhausted:
		return "has no free address"
	case v1.ReasonClusterLimitReached:
		return "holds as many addresses for the cluster as its maxAddressesPerCluster allows"
	case v1.ReasonClusterNotSelected:
		return "does not select the cluster"
	}
	return "is not Ready"
}
