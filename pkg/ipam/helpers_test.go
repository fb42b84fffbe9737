package ipam

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"testing"

	"go4.org/netipx"
)

func owner(uid string) Owner { return Owner{Namespace: "ns", Name: "fip-" + uid, UID: uid} }

func mustPool(t testing.TB, cidr string, exclude ...string) *Pool {
	t.Helper()
	p, err := NewPool(cidr, exclude)
	if err != nil {
		t.Fatalf("NewPool(%q, %q): %v", cidr, exclude, err)
	}
	if err := checkInvariants(p); err != nil {
		t.Fatalf("fresh pool %s: %v", cidr, err)
	}
	return p
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// takeNext gives o the lowest free address as the allocation engine does: it reserves the
// address, then confirms it once the object recording it exists.
func takeNext(p *Pool, o Owner) (netip.Addr, error) {
	a, err := p.ReserveNext(o)
	if err != nil {
		return a, err
	}
	displaced, err := p.Confirm(a, o)
	if err != nil {
		return a, fmt.Errorf("confirming %v for %s: %w", a, o.UID, err)
	}
	if displaced != (Owner{}) {
		return a, fmt.Errorf("confirming %v for %s displaced %v", a, o.UID, displaced)
	}
	return a, nil
}

// drain takes addresses for new owners drain-0, drain-1, ... until the pool is exhausted and
// returns what it got.
func drain(t testing.TB, p *Pool) []netip.Addr {
	t.Helper()
	var got []netip.Addr
	for i := 0; ; i++ {
		a, err := takeNext(p, owner(fmt.Sprint("drain-", i)))
		if errors.Is(err, ErrExhausted) {
			return got
		}
		if err != nil {
			t.Fatalf("takeNext #%d: %v", i, err)
		}
		got = append(got, a)
	}
}

// used is the number of addresses held, reservations included.
func used(p *Pool) int { return len(p.held) }

// available is the number of addresses the pool can still hand out.
func available(p *Pool) *big.Int {
	return new(big.Int).Sub(p.Capacity(), big.NewInt(int64(used(p))))
}

// reserved reports whether addr is reserved but not confirmed.
func reserved(p *Pool, addr netip.Addr) bool {
	_, ok := p.tentative[addr]
	return ok
}

// checkInvariants verifies the internal consistency of a pool: the free
// tree is a valid treap of disjoint, maximal spans inside the usable set,
// no held address is free, and the counters agree with the tree.
func checkInvariants(p *Pool) error {
	if err := checkTreap(p.free.root, nil); err != nil {
		return err
	}
	var (
		prev  *span
		count int
		free  = new(big.Int)
		err   error
	)
	walk(p.free.root, func(s span) bool {
		count++
		switch {
		case !s.lo.IsValid() || !s.hi.IsValid() || s.hi.Less(s.lo):
			err = fmt.Errorf("bad span %v-%v", s.lo, s.hi)
		case prev != nil && !prev.hi.Less(s.lo):
			err = fmt.Errorf("spans out of order or overlapping: %v-%v then %v-%v", prev.lo, prev.hi, s.lo, s.hi)
		case prev != nil && prev.hi.Next() == s.lo:
			err = fmt.Errorf("adjacent spans not merged: %v-%v then %v-%v", prev.lo, prev.hi, s.lo, s.hi)
		case !p.def.avail.ContainsRange(netipx.IPRangeFrom(s.lo, s.hi)):
			err = fmt.Errorf("free span %v-%v not entirely usable", s.lo, s.hi)
		}
		free.Add(free, spanSize(s.lo, s.hi))
		cp := s
		prev = &cp
		return err == nil
	})
	if err != nil {
		return err
	}
	if count != p.free.n {
		return fmt.Errorf("span count %d, tree says %d", count, p.free.n)
	}
	if free.Cmp(available(p)) != 0 {
		return fmt.Errorf("free spans hold %v addresses, capacity %v minus %d held leaves %v", free, p.Capacity(), used(p), available(p))
	}
	byUID := 0
	for uid, h := range p.byUID {
		for _, a := range append([]netip.Addr{h.first}, h.more...) {
			byUID++
			if o, ok := p.held[a]; !ok || o.UID != uid {
				return fmt.Errorf("byUID says %s holds %v, held says %v %v", uid, a, o, ok)
			}
		}
	}
	if byUID != len(p.held) {
		return fmt.Errorf("byUID indexes %d addresses, held has %d", byUID, len(p.held))
	}
	for a := range p.tentative {
		if _, ok := p.held[a]; !ok {
			return fmt.Errorf("%v is reserved but not held", a)
		}
	}
	for a := range p.held {
		if err := p.Check(a); err != nil {
			return fmt.Errorf("held address invalid: %w", err)
		}
		if n := p.free.floor(a); n != nil && !n.hi.Less(a) {
			return fmt.Errorf("held address %v is also free", a)
		}
	}
	return nil
}

func checkTreap(n, parent *node) error {
	if n == nil {
		return nil
	}
	if parent != nil && n.prio > parent.prio {
		return fmt.Errorf("heap order violated at %v", n.lo)
	}
	if n.left != nil && !n.left.lo.Less(n.lo) || n.right != nil && !n.lo.Less(n.right.lo) {
		return fmt.Errorf("search order violated at %v", n.lo)
	}
	if err := checkTreap(n.left, n); err != nil {
		return err
	}
	return checkTreap(n.right, n)
}

// walk visits the spans under n in ascending order until fn returns false.
func walk(n *node, fn func(span) bool) bool {
	if n == nil {
		return true
	}
	return walk(n.left, fn) && fn(n.span) && walk(n.right, fn)
}
