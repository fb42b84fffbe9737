package ipam

import (
	"fmt"
	"net/netip"
	"strings"

	"go4.org/netipx"
)

// Resize replaces the pool's definition. Any change that keeps every
// current allocation valid, which includes growing, is applied with all
// allocations kept. Otherwise nothing changes and the offending allocations
// are returned, sorted, with an error wrapping ErrWouldOrphan: silently
// dropping them would hand a live floating IP to a second owner, so the
// operator must release them first (or the user must undo the edit).
//
// The one way growing can orphan: every address of a /31, /32, /127 or
// /128 is usable, so an allocation there can become the network, broadcast
// or anycast address of the larger prefix. That is refused like any other
// orphan rather than grandfathered, so "never hands out a reserved address"
// holds without exceptions.
//
// A definition that does not parse is reported the same way NewPool reports
// it, with no orphans.
func (p *Pool) Resize(cidr string, exclude []string) ([]Allocation, error) {
	d, err := parseDef(cidr, exclude)
	if err != nil {
		return nil, err
	}
	var orphans []Allocation
	for a, o := range p.held {
		if d.check(a) != nil {
			orphans = append(orphans, Allocation{Addr: a, Owner: o})
		}
	}
	if len(orphans) > 0 {
		sortAllocations(orphans)
		return orphans, fmt.Errorf("%w: %d allocation(s) not valid in %s", ErrWouldOrphan, len(orphans), describe(d))
	}

	// Rebuild rather than patch the free tree: resizes are rare and this
	// keeps the cost at O((allocations + excludes) log) with no special
	// cases for shrinking, growing and moving excludes.
	var b netipx.IPSetBuilder
	b.AddSet(d.avail)
	for a := range p.held {
		b.Remove(a)
	}
	free, _ := b.IPSet()
	p.free = newFreeSet(free.Ranges(), p.free.seed)
	p.def = d
	return nil, nil
}

// Overlaps reports whether the two pools could ever hand out the same
// address. It compares what is handed out, not the raw prefixes, so a
// sub-range carved out of one pool with an exclude may be given to another
// pool.
func (p *Pool) Overlaps(other *Pool) bool {
	if p == nil || other == nil {
		return false
	}
	return p.def.avail.Overlaps(other.def.avail)
}

// Clone returns a deep copy. It costs O(allocations + free spans), which is
// the price Allocator.Pool pays to hand out a snapshot without exposing its
// lock-protected state.
func (p *Pool) Clone() *Pool {
	c := &Pool{
		def:   p.def,
		free:  p.free.clone(),
		held:  make(map[netip.Addr]Owner, len(p.held)),
		byUID: make(map[string]holdings, len(p.byUID)),
	}
	for a, o := range p.held {
		c.held[a] = o
	}
	for u, h := range p.byUID {
		h.more = append([]netip.Addr(nil), h.more...)
		c.byUID[u] = h
	}
	if len(p.tentative) > 0 {
		c.tentative = make(map[netip.Addr]struct{}, len(p.tentative))
		for a := range p.tentative {
			c.tentative[a] = struct{}{}
		}
	}
	return c
}

// String describes the definition, e.g. "10.0.0.0/24 exclude 10.0.0.5,
// 10.0.0.8-10.0.0.11", for logs.
func (p *Pool) String() string { return describe(p.def) }

func describe(d rangeDef) string {
	rs := d.excl.Ranges()
	if len(rs) == 0 {
		return d.prefix.String()
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		if r.From() == r.To() {
			parts[i] = r.From().String()
		} else {
			parts[i] = r.String()
		}
	}
	return d.prefix.String() + " exclude " + strings.Join(parts, ", ")
}
