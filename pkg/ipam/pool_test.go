package ipam

import (
	"net/netip"
	"testing"
)

func TestOverlaps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b       []string
		want       bool
		whyComment string
	}{
		{[]string{"10.0.0.0/24"}, []string{"10.0.0.0/25"}, true, "nested"},
		{[]string{"10.0.0.0/25"}, []string{"10.0.0.128/25"}, false, "adjacent"},
		{[]string{"10.0.0.0/24", "10.0.0.128/25"}, []string{"10.0.0.128/25"}, false, "carved out by exclude"},
		{[]string{"10.0.0.0/24", "10.0.0.128-10.0.0.255"}, []string{"10.0.0.127/32"}, true, "exclude does not cover .127"},
		{[]string{"10.0.0.0/24", "10.0.0.130-10.0.0.255"}, []string{"10.0.0.128/25"}, true, "a keeps .129, which b hands out"},
		{[]string{"10.0.0.0/24", "10.0.0.129-10.0.0.255"}, []string{"10.0.0.128/25"}, false, "a keeps only .128, b's network address"},
		{[]string{"10.0.0.0/24"}, []string{"10.0.0.255/32"}, false, "a never hands out its broadcast address"},
		{[]string{"10.0.0.0/24"}, []string{"2001:db8::/64"}, false, "families"},
	}
	for _, tc := range tests {
		a := mustPool(t, tc.a[0], tc.a[1:]...)
		b := mustPool(t, tc.b[0], tc.b[1:]...)
		if got := a.Overlaps(b); got != tc.want || b.Overlaps(a) != got {
			t.Errorf("%s: %q.Overlaps(%q) = %v, want %v", tc.whyComment, tc.a, tc.b, got, tc.want)
		}
	}
	if mustPool(t, "10.0.0.0/24").Overlaps(nil) {
		t.Error("Overlaps(nil) = true")
	}
}

func TestPrefix(t *testing.T) {
	t.Parallel()
	p := mustPool(t, "10.0.0.0/24", "10.0.0.9", "10.0.0.8/30", "10.0.0.20-10.0.0.29")
	if p.Prefix() != netip.MustParsePrefix("10.0.0.0/24") {
		t.Errorf("Prefix() = %v", p.Prefix())
	}
}
