package ipam

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
)

func TestCheck(t *testing.T) {
	t.Parallel()
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
			t.Errorf("%v.Check(%v) = %v, want %v", tc.pool.Prefix(), tc.addr, err, tc.want)
		}
		if tc.want != nil {
			if err := tc.pool.Claim(tc.addr, owner("x")); !errors.Is(err, tc.want) {
				t.Errorf("%v.Claim(%v) = %v, want %v", tc.pool.Prefix(), tc.addr, err, tc.want)
			}
		}
	}
	if used(p4) != 0 || used(p6) != 0 {
		t.Errorf("failed claims held addresses: %d %d", used(p4), used(p6))
	}
}

func TestClaim(t *testing.T) {
	t.Parallel()
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
	if !errors.As(err, &taken) {
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
	if err := p.Claim(addr("10.0.0.4"), Owner{Name: "anon"}); !errors.Is(err, errInvalidOwner) {
		t.Errorf("Claim with empty UID = %v, want errInvalidOwner", err)
	}
	if _, err := p.ReserveNext(Owner{}); !errors.Is(err, errInvalidOwner) {
		t.Errorf("ReserveNext with empty UID = %v, want errInvalidOwner", err)
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
	t.Parallel()
	p := mustPool(t, "10.0.0.0/24")
	o := owner("a")
	if err := p.Claim(addr("10.0.0.50"), o); err != nil {
		t.Fatal(err)
	}
	if err := p.Claim(addr("10.0.0.20"), o); err != nil {
		t.Fatalf("moving claim: %v", err)
	}
	for _, s := range []string{"10.0.0.20", "10.0.0.50"} {
		if h, ok := p.Holder(addr(s)); !ok || h != o {
			t.Errorf("Holder(%s) = %v, %v; want both held by a", s, h, ok)
		}
	}
	if a, _ := p.ReserveNext(o); a != addr("10.0.0.20") || reserved(p, a) {
		t.Errorf("ReserveNext for an owner holding two = %v (reserved %v), want the lowest, still confirmed", a, reserved(p, a))
	}
	if h, ok := p.Release(addr("10.0.0.50")); !ok || h != o {
		t.Errorf("Release = %v, %v", h, ok)
	}
	if _, ok := p.Holder(addr("10.0.0.50")); ok || p.Held() != 1 {
		t.Errorf("after releasing old: 10.0.0.50 held %v, %d held", ok, p.Held())
	}
	// Release in any order while holding several; the lowest left is what ReserveNext returns.
	for _, s := range []string{"10.0.0.30", "10.0.0.40"} {
		if err := p.Claim(addr(s), o); err != nil {
			t.Fatal(err)
		}
	}
	p.Release(addr("10.0.0.30"))
	p.Release(addr("10.0.0.20"))
	if a, _ := p.ReserveNext(o); a != addr("10.0.0.40") || p.Held() != 1 {
		t.Errorf("after releasing all but 10.0.0.40: ReserveNext = %v with %d held", a, p.Held())
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
}

// TestReserveNextReturnsWhatOwnerHolds: a retry never takes a second address, whether the owner's
// address was reserved, confirmed or claimed statically, and it does not turn a confirmed hold
// back into a reservation.
func TestReserveNextReturnsWhatOwnerHolds(t *testing.T) {
	t.Parallel()
	p := mustPool(t, "10.0.0.0/24")
	a1, _ := p.ReserveNext(owner("a"))
	a2, _ := p.ReserveNext(owner("a"))
	b, _ := takeNext(p, owner("b"))
	if a1 != a2 || a1 != addr("10.0.0.1") || b != addr("10.0.0.2") || used(p) != 2 {
		t.Errorf("a=%v,%v b=%v used=%d", a1, a2, b, used(p))
	}
	if again, _ := p.ReserveNext(owner("b")); again != b || reserved(p, b) {
		t.Errorf("ReserveNext after Confirm = %v (reserved %v), want the confirmed %v", again, reserved(p, b), b)
	}
	if err := p.Claim(addr("10.0.0.100"), owner("c")); err != nil {
		t.Fatal(err)
	}
	if c, _ := p.ReserveNext(owner("c")); c != addr("10.0.0.100") || reserved(p, c) {
		t.Errorf("ReserveNext after static Claim = %v, want the claimed address, confirmed", c)
	}
}

func TestReleaseAndReallocate(t *testing.T) {
	t.Parallel()
	p := mustPool(t, "10.0.0.0/29")
	drain(t, p) // .1 - .6 held by drain-0 .. drain-5
	if _, err := p.nextFree(); !errors.Is(err, ErrExhausted) {
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
	nf, _ := p.nextFree()
	if nf != addr("10.0.0.2") || used(p) != 3 {
		t.Errorf("nextFree = %v (used %d), want 10.0.0.2 and nextFree not to hold", nf, used(p))
	}
	for _, want := range []string{"10.0.0.2", "10.0.0.3", "10.0.0.4"} {
		if a, err := takeNext(p, owner("new-"+want)); a != addr(want) || err != nil {
			t.Errorf("takeNext = %v, %v; want %s", a, err, want)
		}
	}
	p.Release(addr("10.0.0.6"))
	if err := p.Claim(addr("10.0.0.6"), owner("drain-0")); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"10.0.0.6", "10.0.0.1"} {
		if o, ok := p.Release(addr(s)); !ok || o.UID != "drain-0" {
			t.Errorf("Release(%s) = %v, %v; want drain-0, which held two", s, o, ok)
		}
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

// TestClaimsInIPv6: static claims far apart in a /64 are held by their owners, and dynamic
// allocation takes the lowest address none of them holds.
func TestClaimsInIPv6(t *testing.T) {
	t.Parallel()
	p := mustPool(t, "2001:db8::/64")
	for _, s := range []string{"2001:db8::ff", "2001:db8::1", "2001:db8::1:0"} {
		if err := p.Claim(addr(s), owner(s)); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"2001:db8::1", "2001:db8::ff", "2001:db8::1:0"} {
		if h, ok := p.Holder(addr(s)); !ok || h != owner(s) {
			t.Errorf("Holder(%s) = %v, %v", s, h, ok)
		}
	}
	if n, _ := takeNext(p, owner("n")); n != addr("2001:db8::2") {
		t.Errorf("takeNext = %v", n)
	}
	if p.Held() != 4 {
		t.Errorf("Held() = %d, want 4", p.Held())
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
}
