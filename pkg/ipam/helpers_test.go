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

// drain allocates until the pool is exhausted and returns what it got.
func drain(t testing.TB, p *Pool) []netip.Addr {
	t.Helper()
	var got []netip.Addr
	for i := 0; ; i++ {
		a, err := p.AllocateNext(owner(fmt.Sprint("drain-", i)))
		if errors.Is(err, ErrExhausted) {
			return got
		}
		if err != nil {
			t.Fatalf("AllocateNext #%d: %v", i, err)
		}
		got = append(got, a)
	}
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
	p.free.walk(func(s span) bool {
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
	if free.Cmp(p.Available()) != 0 {
		return fmt.Errorf("free spans hold %v addresses, Available() = %v", free, p.Available())
	}
	if sum := new(big.Int).Add(p.Available(), big.NewInt(int64(p.Used()))); sum.Cmp(p.Capacity()) != 0 {
		return fmt.Errorf("available %v + used %d != capacity %v", p.Available(), p.Used(), p.Capacity())
	}
	byUID := 0
	for uid, h := range p.byUID {
		for _, a := range h.sorted() {
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
		if p.free.contains(a) {
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
