package ipam

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
)

func TestCheck(t *testing.T) {
	p4 := mustPool(t, "10.0.0.0/24", "10.0.0.5", "10.0.0.8/30", "10.0.0.20-10.0.0.29", "10.0.0.0/31")
	p6 := mustPool(t, "2001:db8::/64", "2001:db8::ffff:ffff:ffff:fff0/124")
	tests := []struct {
		pool *Pool
		addr netip.Addr
		want error
	}{
		{p4, addr("10.0.0.1"), ErrExcluded},
		{p4, addr("10.0.0.2"), nil},
		{p4, addr("10.0.0.0"), ErrReserved}, // excluded too; the reason that outlives exclude edits wins
		{p4, addr("10.0.0.255"), ErrReserved},
		{p4, addr("10.0.0.254"), nil},
		{p4, addr("10.0.0.5"), ErrExcluded},
		{p4, addr("10.0.0.4"), nil},
		{p4, addr("10.0.0.8"), ErrExcluded},
		{p4, addr("10.0.0.11"), ErrExcluded},
		{p4, addr("10.0.0.12"), nil},
		{p4, addr("10.0.0.20"), ErrExcluded},
		{p4, addr("10.0.0.29"), ErrExcluded},
		{p4, addr("10.0.0.30"), nil},
		{p4, addr("10.0.1.1"), ErrOutOfRange},
		{p4, addr("9.255.255.255"), ErrOutOfRange},
		{p4, addr("::ffff:10.0.0.2"), ErrOutOfRange},
		{p4, addr("2001:db8::1"), ErrOutOfRange},
		{p4, netip.Addr{}, ErrOutOfRange},
		{p6, addr("2001:db8::"), ErrReserved},
		{p6, addr("2001:db8::1"), nil},
		{p6, addr("2001:db8::ffff:ffff:ffff:ffef"), nil},
		{p6, addr("2001:db8::ffff:ffff:ffff:fff0"), ErrExcluded},
		{p6, addr("2001:db8::ffff:ffff:ffff:ffff"), ErrExcluded},
		{p6, addr("2001:db8:0:1::"), ErrOutOfRange},
		{p6, addr("fe80::1%eth0"), ErrOutOfRange},
		{p6, addr("2001:db8::1%eth0"), ErrOutOfRange},
		{p6, addr("10.0.0.2"), ErrOutOfRange},
	}
	for _, tc := range tests {
		err := tc.pool.Check(tc.addr)
		if tc.want == nil && err != nil || !errors.Is(err, tc.want) {
			t.Errorf("%v.Check(%v) = %v, want %v", tc.pool, tc.addr, err, tc.want)
		}
		if tc.want != nil {
			if err := tc.pool.Claim(tc.addr, owner("x")); !errors.Is(err, tc.want) {
				t.Errorf("%v.Claim(%v) = %v, want %v", tc.pool, tc.addr, err, tc.want)
			}
		}
	}
	if p4.Used() != 0 || p6.Used() != 0 {
		t.Errorf("failed claims held addresses: %v %v", p4.Allocations(), p6.Allocations())
	}
}

func TestClaim(t *testing.T) {
	p := mustPool(t, "10.0.0.0/29", "10.0.0.6")
	alice, bob := owner("alice"), owner("bob")

	if err := p.Claim(addr("10.0.0.3"), alice); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if err := p.Claim(addr("10.0.0.3"), alice); err != nil {
		t.Errorf("repeated Claim by the same UID: %v", err)
	}
	renamed := Owner{Namespace: "other", Name: "other", UID: "alice"}
	if err := p.Claim(addr("10.0.0.3"), renamed); err != nil {
		t.Errorf("Claim by same UID under another name: %v", err)
	}

	err := p.Claim(addr("10.0.0.3"), bob)
	var taken *TakenError
	if !errors.Is(err, ErrTaken) || !errors.As(err, &taken) {
		t.Fatalf("Claim of held address = %v, want *TakenError", err)
	}
	if taken.Holder != alice || taken.Addr != addr("10.0.0.3") {
		t.Errorf("TakenError = %+v, want holder %v", taken, alice)
	}
	if msg := err.Error(); msg != "ipam: address 10.0.0.3 is taken by ns/fip-alice (uid alice)" {
		t.Errorf("message %q", msg)
	}
	if s := (Owner{Name: "cluster-wide", UID: "u"}).String(); s != "cluster-wide (uid u)" {
		t.Errorf("cluster-scoped Owner.String() = %q", s)
	}

	for _, tc := range []struct {
		addr string
		want error
	}{
		{"10.0.0.6", ErrExcluded},
		{"10.0.0.0", ErrReserved},
		{"10.0.0.7", ErrReserved},
		{"10.0.0.8", ErrOutOfRange},
		{"fd00::1", ErrOutOfRange},
	} {
		if err := p.Claim(addr(tc.addr), bob); !errors.Is(err, tc.want) {
			t.Errorf("Claim(%s) = %v, want %v", tc.addr, err, tc.want)
		}
	}
	if err := p.Claim(addr("10.0.0.4"), Owner{Name: "anon"}); !errors.Is(err, ErrInvalidOwner) {
		t.Errorf("Claim with empty UID = %v, want ErrInvalidOwner", err)
	}
	if _, err := p.AllocateNext(Owner{}); !errors.Is(err, ErrInvalidOwner) {
		t.Errorf("AllocateNext with empty UID = %v, want ErrInvalidOwner", err)
	}

	// A static claim in the middle splits the free interval; dynamic
	// allocation must flow around it.
	got := drain(t, p)
	want := []netip.Addr{addr("10.0.0.1"), addr("10.0.0.2"), addr("10.0.0.4"), addr("10.0.0.5")}
	if !slices.Equal(got, want) {
		t.Errorf("after static claim, allocated %v, want %v", got, want)
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
}

func TestClaimNewBeforeReleasingOld(t *testing.T) {
	p := mustPool(t, "10.0.0.0/24")
	o := owner("a")
	if err := p.Claim(addr("10.0.0.50"), o); err != nil {
		t.Fatal(err)
	}
	if err := p.Claim(addr("10.0.0.20"), o); err != nil {
		t.Fatalf("moving claim: %v", err)
	}
	if got := p.AddressesOf("a"); !slices.Equal(got, []netip.Addr{addr("10.0.0.20"), addr("10.0.0.50")}) {
		t.Errorf("AddressesOf = %v, want both", got)
	}
	if a, _ := p.AddressOf("a"); a != addr("10.0.0.20") {
		t.Errorf("AddressOf = %v, want the lowest", a)
	}
	if a, _ := p.AllocateNext(o); a != addr("10.0.0.20") {
		t.Errorf("AllocateNext for an owner holding two = %v, want the lowest", a)
	}
	if h, ok := p.Release(addr("10.0.0.50")); !ok || h != o {
		t.Errorf("Release = %v, %v", h, ok)
	}
	if got := p.AddressesOf("a"); !slices.Equal(got, []netip.Addr{addr("10.0.0.20")}) {
		t.Errorf("after releasing old, AddressesOf = %v", got)
	}
	// Release in any order while holding several.
	for _, s := range []string{"10.0.0.30", "10.0.0.40"} {
		if err := p.Claim(addr(s), o); err != nil {
			t.Fatal(err)
		}
	}
	p.Release(addr("10.0.0.30"))
	if got := p.AddressesOf("a"); !slices.Equal(got, []netip.Addr{addr("10.0.0.20"), addr("10.0.0.40")}) {
		t.Errorf("after releasing the middle one, AddressesOf = %v", got)
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
}

func TestAllocateNextIdempotent(t *testing.T) {
	p := mustPool(t, "10.0.0.0/24")
	a1, _ := p.AllocateNext(owner("a"))
	a2, _ := p.AllocateNext(owner("a"))
	b, _ := p.AllocateNext(owner("b"))
	if a1 != a2 || a1 != addr("10.0.0.1") || b != addr("10.0.0.2") || p.Used() != 2 {
		t.Errorf("a=%v,%v b=%v used=%d", a1, a2, b, p.Used())
	}
	if err := p.Claim(addr("10.0.0.100"), owner("c")); err != nil {
		t.Fatal(err)
	}
	if c, _ := p.AllocateNext(owner("c")); c != addr("10.0.0.100") {
		t.Errorf("AllocateNext after static Claim = %v, want the claimed address", c)
	}
}

func TestReleaseAndReallocate(t *testing.T) {
	p := mustPool(t, "10.0.0.0/29")
	drain(t, p) // .1 - .6 held by drain-0 .. drain-5
	if _, err := p.NextFree(); !errors.Is(err, ErrExhausted) {
		t.Fatal("not exhausted")
	}
	if o, ok := p.Release(addr("10.0.0.4")); !ok || o.UID != "drain-3" {
		t.Errorf("Release(.4) = %v, %v", o, ok)
	}
	if _, ok := p.Release(addr("10.0.0.4")); ok {
		t.Error("second Release reported a holder")
	}
	if _, ok := p.Release(netip.Addr{}); ok {
		t.Error("Release of the zero Addr reported a holder")
	}
	p.Release(addr("10.0.0.2"))
	p.Release(addr("10.0.0.3"))
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
	if p.free.n != 1 {
		t.Errorf("released .2-.4 should merge into one span, have %d", p.free.n)
	}
	nf, _ := p.NextFree()
	if nf != addr("10.0.0.2") || p.Used() != 3 {
		t.Errorf("NextFree = %v (used %d), want 10.0.0.2 and NextFree not to hold", nf, p.Used())
	}
	for _, want := range []string{"10.0.0.2", "10.0.0.3", "10.0.0.4"} {
		if a, err := p.AllocateNext(owner("new-" + want)); a != addr(want) || err != nil {
			t.Errorf("AllocateNext = %v, %v; want %s", a, err, want)
		}
	}
	p.Release(addr("10.0.0.6"))
	if err := p.Claim(addr("10.0.0.6"), owner("drain-0")); err != nil {
		t.Fatal(err)
	}
	got := p.ReleaseOwner("drain-0")
	if !slices.Equal(got, []netip.Addr{addr("10.0.0.1"), addr("10.0.0.6")}) {
		t.Errorf("ReleaseOwner = %v", got)
	}
	if p.ReleaseOwner("nobody") != nil {
		t.Error("ReleaseOwner of unknown UID returned addresses")
	}
	if _, ok := p.Holder(addr("10.0.0.1")); ok {
		t.Error("released address still has a holder")
	}
	if o, ok := p.Holder(addr("10.0.0.5")); !ok || o.UID != "drain-4" {
		t.Errorf("Holder(.5) = %v, %v", o, ok)
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
}

func TestAllocations(t *testing.T) {
	p := mustPool(t, "2001:db8::/64")
	for _, s := range []string{"2001:db8::ff", "2001:db8::1", "2001:db8::1:0"} {
		if err := p.Claim(addr(s), owner(s)); err != nil {
			t.Fatal(err)
		}
	}
	got := p.Allocations()
	want := []Allocation{
		{addr("2001:db8::1"), owner("2001:db8::1")},
		{addr("2001:db8::ff"), owner("2001:db8::ff")},
		{addr("2001:db8::1:0"), owner("2001:db8::1:0")},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Allocations() = %v, want %v", got, want)
	}
	if n, _ := p.AllocateNext(owner("n")); n != addr("2001:db8::2") {
		t.Errorf("AllocateNext = %v", n)
	}
}
