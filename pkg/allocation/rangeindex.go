package allocation

import (
	"net/netip"
	"slices"
	"sync"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

// rangeIndex finds the ranges of one address space whose CIDR overlaps a range's without looking
// at the others, so that deciding an overlap costs the same with one range or a thousand. Ranges
// of different spaces never overlap: they are separate networks. Two CIDRs overlap only when one
// holds the other: the ranges holding r's CIDR are those at one of its at most 129 ancestor
// prefixes (exact), the ranges inside it are those registered under it (under). Each range's pool
// is built once per definition and kept, so an overlap check never parses an exclude list again.
type rangeIndex struct {
	mu      sync.Mutex
	entries map[string]*indexedRange
	exact   prefixSets
	under   prefixSets
	// bySpace lists each space's ranges; orders holds each space's selection order (rangeOrder),
	// built again only after a range of the space came, went, or changed its spec or deletion
	// (stale), never for a change of status alone.
	bySpace map[string][]*indexedRange
	orders  map[string]*spaceOrder
	stale   map[string]bool
	// versions numbers the orders built, so that a selection cursor knows its order.
	versions uint64
}

// spaceOrder is one space's ranges in selection order, with their parsed selectors; never changed
// once built, so callers share it.
type spaceOrder struct {
	ranges  []orderedRange
	version uint64
}

// indexedRange is what the index keeps of one range.
type indexedRange struct {
	r      *v1.FloatingIPRange
	key    spacePrefix
	listed bool
	spec   string
	// pool is built on first need; nil with poolErr set when the definition is invalid.
	pool    *ipam.Pool
	poolErr error
	// space is the hash of the range's space, under which bySpace lists it; selector is its
	// clusterSelector, parsed when it changes.
	space    string
	selector ClusterSelector
	family   harvester.Family
}

func newRangeIndex() *rangeIndex {
	return &rangeIndex{entries: map[string]*indexedRange{}, exact: prefixSets{}, under: prefixSets{},
		bySpace: map[string][]*indexedRange{}, orders: map[string]*spaceOrder{}, stale: map[string]bool{}}
}

// set records r as it is now; an unchanged definition keeps its pool.
func (x *rangeIndex) set(r *v1.FloatingIPRange) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e := x.entries[r.Name]; e != nil && e.spec == specKey(r) && e.r.UID == r.UID {
		if e.r.Generation != r.Generation || (e.r.DeletionTimestamp == nil) != (r.DeletionTimestamp == nil) {
			x.stale[e.space] = true
		}
		e.selector = e.selector.update(r.Spec.ClusterSelector)
		e.r = r
		return
	}
	x.removeLocked(r.Name)
	e := &indexedRange{r: r, spec: specKey(r), space: v1.SpaceOf(r).Hash(), family: harvester.FamilyOfCIDR(r.Spec.IPRange)}
	e.selector = e.selector.update(r.Spec.ClusterSelector)
	x.entries[r.Name] = e
	x.bySpace[e.space] = append(x.bySpace[e.space], e)
	x.stale[e.space] = true
	p, err := netip.ParsePrefix(r.Spec.IPRange)
	if err != nil {
		return // an invalid range overlaps nothing; its own status says why
	}
	e.key, e.listed = spacePrefix{space: v1.SpaceOf(r).Hash(), prefix: p.Masked()}, true
	x.exact.add(e.key, r.Name)
	for bits := e.key.prefix.Bits(); bits >= 0; bits-- {
		x.under.add(ancestor(e.key, bits), r.Name)
	}
}

// ancestor is key's prefix shortened to bits, in the same space.
func ancestor(key spacePrefix, bits int) spacePrefix {
	return spacePrefix{space: key.space, prefix: netip.PrefixFrom(key.prefix.Addr(), bits).Masked()}
}

// remove forgets the range name.
func (x *rangeIndex) remove(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(name)
}

func (x *rangeIndex) removeLocked(name string) {
	e := x.entries[name]
	if e == nil {
		return
	}
	delete(x.entries, name)
	if others := slices.DeleteFunc(x.bySpace[e.space], func(o *indexedRange) bool { return o == e }); len(others) == 0 {
		delete(x.bySpace, e.space)
		delete(x.orders, e.space)
		delete(x.stale, e.space)
	} else {
		x.bySpace[e.space] = others
		x.stale[e.space] = true
	}
	if !e.listed {
		return
	}
	x.exact.drop(e.key, name)
	for bits := e.key.prefix.Bits(); bits >= 0; bits-- {
		x.under.drop(ancestor(e.key, bits), name)
	}
}

// overlapping returns the other ranges of r's space whose pools share an address with pool, r's
// own: at most 129 map lookups and one pool comparison per range whose CIDR actually meets r's.
func (x *rangeIndex) overlapping(r *v1.FloatingIPRange, pool *ipam.Pool) []*v1.FloatingIPRange {
	p, err := netip.ParsePrefix(r.Spec.IPRange)
	if err != nil || pool == nil {
		return nil
	}
	key := spacePrefix{space: v1.SpaceOf(r).Hash(), prefix: p.Masked()}
	x.mu.Lock()
	defer x.mu.Unlock()
	seen := map[string]struct{}{}
	var out []*v1.FloatingIPRange
	check := func(names map[string]struct{}) {
		for name := range names {
			if _, ok := seen[name]; ok || name == r.Name {
				continue
			}
			seen[name] = struct{}{}
			e := x.entries[name]
			if p := e.poolLocked(); p != nil && pool.Overlaps(p) {
				out = append(out, e.r)
			}
		}
	}
	for bits := key.prefix.Bits(); bits >= 0; bits-- {
		check(x.exact[ancestor(key, bits)])
	}
	check(x.under[key])
	return out
}

// poolLocked is e's pool, built on first need; nil when the definition is invalid. x.mu is held.
func (e *indexedRange) poolLocked() *ipam.Pool {
	if e.pool == nil && e.poolErr == nil {
		e.pool, e.poolErr = ipam.NewPool(e.r.Spec.IPRange, e.r.Spec.Exclude)
	}
	return e.pool
}

// order returns the selection order of the space hash, built again if a range of it changed.
func (x *rangeIndex) order(space string) *spaceOrder {
	x.mu.Lock()
	defer x.mu.Unlock()
	if o := x.orders[space]; o != nil && !x.stale[space] {
		return o
	}
	entries := x.bySpace[space]
	o := &spaceOrder{ranges: make([]orderedRange, 0, len(entries))}
	for _, e := range entries {
		o.ranges = append(o.ranges, orderedRange{r: e.r, selector: e.selector, family: e.family})
	}
	slices.SortFunc(o.ranges, func(a, b orderedRange) int { return rangeOrder(a.r, b.r) })
	x.versions++
	o.version = x.versions
	x.orders[space] = o
	delete(x.stale, space)
	return o
}
