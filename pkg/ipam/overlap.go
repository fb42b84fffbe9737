package ipam

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
