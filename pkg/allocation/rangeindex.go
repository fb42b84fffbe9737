package allocation

import (
	"net/netip"
	"sync"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
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
}

func newRangeIndex() *rangeIndex {
	return &rangeIndex{entries: map[string]*indexedRange{}, exact: prefixSets{}, under: prefixSets{}}
}

// set records r as it is now; an unchanged definition keeps its pool.
func (x *rangeIndex) set(r *v1.FloatingIPRange) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e := x.entries[r.Name]; e != nil && e.spec == specKey(r) && e.r.UID == r.UID {
		e.r = r
		return
	}
	x.removeLocked(r.Name)
	e := &indexedRange{r: r, spec: specKey(r)}
	x.entries[r.Name] = e
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

// size is the number of ranges indexed.
func (x *rangeIndex) size() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.entries)
}
