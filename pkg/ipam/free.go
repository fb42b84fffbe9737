package ipam

import (
	"net/netip"

	"go4.org/netipx"
)

// span is an inclusive run of free addresses.
type span struct{ lo, hi netip.Addr }

// node is a treap node keyed by span.lo. Spans never overlap and are never
// adjacent (adjacent spans are merged), so ordering by lo also orders by hi,
// which is what lets take and put adjust a span's bounds in place without
// re-keying the tree.
type node struct {
	span
	prio        uint64
	left, right *node
}

// freeSet holds the free addresses of a pool as disjoint, maximal spans in a
// treap. A treap was chosen over a sorted slice because static claims and
// out-of-order releases insert spans in the middle, which would make a
// slice O(n) per operation on a fragmented /16; a treap is O(log n) expected
// and far shorter to get right than a red-black tree.
type freeSet struct {
	root *node
	n    int // number of spans, for tests and memory reasoning
	// seed drives the treap priorities. It lives in the set rather than in a
	// package-level generator so pools share no mutable state, and it is
	// deterministic so that runs (and fuzz failures) are reproducible.
	seed uint64
}

func newFreeSet(ranges []netipx.IPRange) freeSet {
	var f freeSet
	for _, r := range ranges {
		f.insert(span{r.From(), r.To()})
	}
	return f
}

// nextPrio is splitmix64: cheap, and well mixed enough that sequential
// inserts still produce a balanced treap.
func (f *freeSet) nextPrio() uint64 {
	f.seed += 0x9e3779b97f4a7c15
	z := f.seed
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (f *freeSet) lowest() (netip.Addr, bool) {
	n := f.root
	if n == nil {
		return netip.Addr{}, false
	}
	for n.left != nil {
		n = n.left
	}
	return n.lo, true
}

// floor returns the span with the greatest lo <= a, or nil.
func (f *freeSet) floor(a netip.Addr) *node {
	var best *node
	for n := f.root; n != nil; {
		if a.Less(n.lo) {
			n = n.left
		} else {
			best, n = n, n.right
		}
	}
	return best
}

// above returns the span with the least lo > a, or nil.
func (f *freeSet) above(a netip.Addr) *node {
	var best *node
	for n := f.root; n != nil; {
		if a.Less(n.lo) {
			best, n = n, n.left
		} else {
			n = n.right
		}
	}
	return best
}

// take removes a single free address, splitting its span if a lies inside.
// It reports false if a was not free.
func (f *freeSet) take(a netip.Addr) bool {
	n := f.floor(a)
	if n == nil || n.hi.Less(a) {
		return false
	}
	switch {
	case n.lo == a && n.hi == a:
		f.delete(a)
	case n.lo == a:
		n.lo = a.Next()
	case n.hi == a:
		n.hi = a.Prev()
	default:
		hi := n.hi
		n.hi = a.Prev()
		f.insert(span{a.Next(), hi})
	}
	return true
}

// put returns a single address to the set, merging with its neighbours so
// that spans stay maximal and the tree does not grow with churn. Next()
// of the family's last address is the zero Addr, which never equals a valid
// bound, so the edges of the address space need no special case.
func (f *freeSet) put(a netip.Addr) {
	prev := f.floor(a)
	if prev != nil && !prev.hi.Less(a) {
		return // already free
	}
	next := f.above(a)
	joinPrev := prev != nil && prev.hi.Next() == a
	joinNext := next != nil && a.Next() == next.lo
	switch {
	case joinPrev && joinNext:
		hi := next.hi
		f.delete(next.lo)
		prev.hi = hi
	case joinPrev:
		prev.hi = a
	case joinNext:
		next.lo = a
	default:
		f.insert(span{a, a})
	}
}

func (f *freeSet) insert(s span) {
	n := &node{span: s, prio: f.nextPrio()}
	l, r := split(f.root, s.lo)
	f.root = merge(merge(l, n), r)
	f.n++
}

func (f *freeSet) delete(lo netip.Addr) {
	var ok bool
	f.root, ok = remove(f.root, lo)
	if ok {
		f.n--
	}
}

// split partitions t into spans with lo < key and lo >= key.
func split(t *node, key netip.Addr) (l, r *node) {
	if t == nil {
		return nil, nil
	}
	if t.lo.Less(key) {
		t.right, r = split(t.right, key)
		return t, r
	}
	l, t.left = split(t.left, key)
	return l, t
}

// merge joins two treaps where every key in a is below every key in b.
func merge(a, b *node) *node {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a.right = merge(a.right, b)
		return a
	default:
		b.left = merge(a, b.left)
		return b
	}
}

func remove(t *node, key netip.Addr) (*node, bool) {
	if t == nil {
		return nil, false
	}
	var ok bool
	switch c := key.Compare(t.lo); {
	case c < 0:
		t.left, ok = remove(t.left, key)
	case c > 0:
		t.right, ok = remove(t.right, key)
	default:
		return merge(t.left, t.right), true
	}
	return t, ok
}
