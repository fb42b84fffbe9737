package ipam

import (
	"errors"
	"net/netip"
	"testing"

	"go4.org/netipx"
)

func withheldSet(t *testing.T, ranges ...string) *netipx.IPSet {
	t.Helper()
	var b netipx.IPSetBuilder
	for _, r := range ranges {
		b.AddRange(netipx.MustParseIPRange(r))
	}
	s, err := b.IPSet()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestWithheldAddressesAreNeverHandedOut: a withheld run is skipped by dynamic reservation and
// refused to a static one, an address the record already holds there stays held and, released,
// does not become free; Available leaves the run out.
func TestWithheldAddressesAreNeverHandedOut(t *testing.T) {
	// 10.0.0.1-10.0.0.6 can be handed out; 10.0.0.1-10.0.0.3 and 10.0.0.5 are withheld, and the
	// run reaching outside the range is clipped to it.
	p, err := NewPoolWithheld("10.0.0.0/29", nil, withheldSet(t, "9.255.255.250-10.0.0.3", "10.0.0.5-10.0.0.5"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Available().Int64(); got != 2 {
		t.Fatalf("Available = %d, want 2 (6 less 4 withheld)", got)
	}
	old := Owner{UID: "old"}
	if err := p.Claim(netip.MustParseAddr("10.0.0.2"), old); err != nil {
		t.Fatalf("the record's address in a withheld run: %v, want it kept", err)
	}
	if got := p.Withheld().Int64(); got != 3 {
		t.Fatalf("Withheld = %d after a claim inside it, want 3", got)
	}
	if err := p.Reserve(netip.MustParseAddr("10.0.0.5"), Owner{UID: "static"}); !errors.Is(err, ErrWithheld) {
		t.Fatalf("reserving a withheld address: %v, want ErrWithheld", err)
	}
	var got []string
	for _, uid := range []string{"a", "b"} {
		a, err := p.ReserveNext(Owner{UID: uid})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a.String())
	}
	if got[0] != "10.0.0.4" || got[1] != "10.0.0.6" {
		t.Fatalf("dynamic reservations %v, want [10.0.0.4 10.0.0.6]", got)
	}
	if _, err := p.ReserveNext(Owner{UID: "c"}); !errors.Is(err, ErrExhausted) {
		t.Fatalf("with every other address withheld or held: %v, want ErrExhausted", err)
	}
	p.Release(netip.MustParseAddr("10.0.0.2"))
	if _, err := p.ReserveNext(Owner{UID: "d"}); !errors.Is(err, ErrExhausted) {
		t.Fatalf("a released withheld address was handed out again: %v", err)
	}
	if got := p.Available().Int64(); got != 0 {
		t.Fatalf("Available = %d, want 0", got)
	}
}

// TestNothingWithheldIsAPlainPool: a nil set, or one outside the range, changes nothing.
func TestNothingWithheldIsAPlainPool(t *testing.T) {
	for _, w := range []*netipx.IPSet{nil, withheldSet(t, "10.1.0.0-10.1.0.255")} {
		p, err := NewPoolWithheld("10.0.0.0/30", nil, w)
		if err != nil {
			t.Fatal(err)
		}
		if p.Available().Int64() != 2 || p.Withheld().Sign() != 0 {
			t.Fatalf("available %s withheld %s, want 2 and 0", p.Available(), p.Withheld())
		}
	}
}
