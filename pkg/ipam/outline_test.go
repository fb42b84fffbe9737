package ipam

import (
	"errors"
	"net/netip"
	"testing"
)

// TestOutline: an outline tells its pool's prefix, capacity and overlaps, holds nothing of what the
// pool holds, and hands nothing out.
func TestOutline(t *testing.T) {
	t.Parallel()
	p, err := NewPool("10.0.0.0/29", []string{"10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewPool("10.0.0.0/30", []string{"10.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ReserveNext(Owner{Name: "a", UID: "a"}); err != nil {
		t.Fatal(err)
	}
	o := p.Outline()
	if o.Prefix() != p.Prefix() || o.Capacity().Cmp(p.Capacity()) != 0 {
		t.Errorf("outline %v cap %v; want %v cap %v", o.Prefix(), o.Capacity(), p.Prefix(), p.Capacity())
	}
	if o.Overlaps(other) || p.Overlaps(other) {
		t.Error("10.0.0.0/29 without .1 and 10.0.0.0/30 without .2 share no address that is handed out")
	}
	if wide, _ := NewPool("10.0.0.0/28", nil); !o.Overlaps(wide) {
		t.Error("the outline does not overlap a pool holding its addresses")
	}
	if o.Held() != 0 {
		t.Errorf("the outline holds %d", o.Held())
	}
	if _, err := o.ReserveNext(Owner{Name: "b", UID: "b"}); !errors.Is(err, ErrExhausted) {
		t.Errorf("the outline handed out an address: %v", err)
	}
	if _, ok := o.Holder(netip.MustParseAddr("10.0.0.2")); ok {
		t.Error("the outline names a holder")
	}
	if (*Pool)(nil).Outline() != nil {
		t.Error("the outline of no pool is a pool")
	}
}
