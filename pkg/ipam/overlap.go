package ipam

import "net/netip"

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

// Outline returns a pool of p's definition that holds nothing and hands nothing out. A
// definition never changes once built, so what an outline tells (its prefix, capacity and
// overlaps) may be read without the lock that guards p's holdings.
func (p *Pool) Outline() *Pool {
	if p == nil {
		return nil
	}
	return &Pool{def: p.def, held: map[netip.Addr]Owner{}, byUID: map[string]holdings{}}
}
