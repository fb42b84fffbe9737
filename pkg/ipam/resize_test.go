package ipam

import (
	"errors"
	"math/big"
	"net/netip"
	"slices"
	"testing"
)

func TestResizeGrowKeepsAllocations(t *testing.T) {
	p := mustPool(t, "10.0.0.0/29", "10.0.0.3")
	drain(t, p)
	before := p.Allocations()
	orphans, err := p.Resize("10.0.0.0/24", nil)
	if err != nil || orphans != nil {
		t.Fatalf("grow: %v, %v", orphans, err)
	}
	if got := p.Allocations(); !slices.Equal(got, before) {
		t.Errorf("allocations changed: %v -> %v", before, got)
	}
	if p.Capacity().Cmp(big.NewInt(254)) != 0 {
		t.Errorf("Capacity() = %v", p.Capacity())
	}
	// The old broadcast (.7) and the formerly excluded .3 are now free; .3
	// is the lowest.
	for _, want := range []string{"10.0.0.3", "10.0.0.7", "10.0.0.8"} {
		if a, err := p.AllocateNext(owner("g" + want)); a != addr(want) || err != nil {
			t.Errorf("AllocateNext = %v, %v; want %s", a, err, want)
		}
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
}

func TestResizeRefusesOrphans(t *testing.T) {
	tests := []struct {
		name    string
		cidr    string
		exclude []string
		orphans []string
	}{
		{"shrink", "10.0.0.0/28", nil, []string{"10.0.0.15", "10.0.0.40"}},
		{"new broadcast", "10.0.0.0/28", []string{"10.0.0.2"}, []string{"10.0.0.2", "10.0.0.15", "10.0.0.40"}},
		{"exclude held", "10.0.0.0/24", []string{"10.0.0.1-10.0.0.2"}, []string{"10.0.0.1", "10.0.0.2"}},
		{"move", "10.0.1.0/24", nil, []string{"10.0.0.1", "10.0.0.2", "10.0.0.15", "10.0.0.40"}},
		{"family", "2001:db8::/64", nil, []string{"10.0.0.1", "10.0.0.2", "10.0.0.15", "10.0.0.40"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPool(t, "10.0.0.0/24", "10.0.0.100")
			for _, s := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.15", "10.0.0.40"} {
				if err := p.Claim(addr(s), owner(s)); err != nil {
					t.Fatal(err)
				}
			}
			before, capBefore := p.Allocations(), p.Capacity()
			nextBefore, _ := p.NextFree()

			orphans, err := p.Resize(tc.cidr, tc.exclude)
			if !errors.Is(err, ErrWouldOrphan) {
				t.Fatalf("Resize = %v, want ErrWouldOrphan", err)
			}
			var got []string
			for _, o := range orphans {
				got = append(got, o.Addr.String())
				if o.Owner.UID != o.Addr.String() {
					t.Errorf("orphan %v has owner %v", o.Addr, o.Owner)
				}
			}
			if !slices.Equal(got, tc.orphans) {
				t.Errorf("orphans = %v, want %v", got, tc.orphans)
			}

			next, _ := p.NextFree()
			if !slices.Equal(p.Allocations(), before) || p.Capacity().Cmp(capBefore) != 0 ||
				p.Prefix().String() != "10.0.0.0/24" || next != nextBefore || p.Check(addr("10.0.0.100")) == nil {
				t.Errorf("refused Resize changed the pool: %v", p)
			}
			if err := checkInvariants(p); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestResizeShrinkWithoutOrphans(t *testing.T) {
	p := mustPool(t, "2001:db8::/64")
	for _, s := range []string{"2001:db8::1", "2001:db8::5", "2001:db8::80"} {
		_ = p.Claim(addr(s), owner(s))
	}
	if orphans, err := p.Resize("2001:db8::/120", []string{"2001:db8::2-2001:db8::4", "2001:db8::f0/124"}); err != nil {
		t.Fatalf("Resize: %v %v", orphans, err)
	}
	if want := big.NewInt(255 - 3 - 16); p.Capacity().Cmp(want) != 0 {
		t.Errorf("Capacity() = %v, want %v", p.Capacity(), want)
	}
	if p.Used() != 3 {
		t.Errorf("Used() = %d", p.Used())
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
	got := drain(t, p)
	if len(got) != 255-3-16-3 || got[0] != addr("2001:db8::6") || got[len(got)-1] != addr("2001:db8::ef") {
		t.Errorf("drained %d, %v .. %v", len(got), got[0], got[len(got)-1])
	}
	// Resizing to the same definition is a no-op that keeps everything.
	if _, err := p.Resize("2001:db8::/120", []string{"2001:db8::2-2001:db8::4", "2001:db8::f0/124"}); err != nil {
		t.Errorf("identity Resize: %v", err)
	}
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
}

func TestResizeInvalidKeepsPool(t *testing.T) {
	p := mustPool(t, "10.0.0.0/24")
	_, _ = p.AllocateNext(owner("a"))
	for _, bad := range [][]string{{""}, {"foo"}, {"10.0.0.0/33"}, {"10.0.0.5/24"}, {"10.0.0.0/24", "10.0.0.9-10.0.0.1"}, {"10.0.0.0/24", "::1"}} {
		orphans, err := p.Resize(bad[0], bad[1:])
		if err == nil || orphans != nil || errors.Is(err, ErrWouldOrphan) {
			t.Errorf("Resize(%q) = %v, %v", bad, orphans, err)
		}
	}
	if p.Prefix() != netip.MustParsePrefix("10.0.0.0/24") || p.Used() != 1 {
		t.Errorf("pool changed: %v used %d", p, p.Used())
	}
}

// Growing keeps every allocation except in one corner: a /31 or /32 (or
// /127, /128) hands out addresses that become reserved in a larger prefix.
func TestResizeGrowPointToPoint(t *testing.T) {
	tests := []struct {
		from, to, held string
		orphan         bool
	}{
		{"10.0.0.0/31", "10.0.0.0/30", "10.0.0.0", true},
		{"10.0.0.0/31", "10.0.0.0/30", "10.0.0.1", false},
		{"10.0.0.3/32", "10.0.0.0/30", "10.0.0.3", true},
		{"10.0.0.2/31", "10.0.0.0/29", "10.0.0.3", false},
		{"2001:db8::/127", "2001:db8::/64", "2001:db8::", true},
		{"2001:db8::/127", "2001:db8::/64", "2001:db8::1", false},
		{"2001:db8::ffff/128", "2001:db8::/112", "2001:db8::ffff", false}, // no IPv6 broadcast
	}
	for _, tc := range tests {
		p := mustPool(t, tc.from)
		if err := p.Claim(addr(tc.held), owner("a")); err != nil {
			t.Fatal(err)
		}
		orphans, err := p.Resize(tc.to, nil)
		if tc.orphan != errors.Is(err, ErrWouldOrphan) || tc.orphan != (len(orphans) == 1) {
			t.Errorf("%s -> %s holding %s: %v, %v", tc.from, tc.to, tc.held, orphans, err)
		}
		if !tc.orphan && (err != nil || p.Prefix().String() != tc.to) {
			t.Errorf("%s -> %s holding %s: %v, now %v", tc.from, tc.to, tc.held, err, p)
		}
	}
}
