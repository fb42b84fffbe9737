package crds

import (
	"net/netip"
	"regexp"
	"strings"
	"testing"
)

// TestMappedAddressPattern checks the CEL rule's expression against the address parser: it must
// catch every spelling of an IPv4-mapped IPv6 address and nothing else.
func TestMappedAddressPattern(t *testing.T) {
	iprange := regexp.MustCompile("^(" + mappedAddress + ")")
	exclude := regexp.MustCompile("(^|-)(" + mappedAddress + ")")
	for _, tc := range []struct {
		text   string
		mapped bool
	}{
		{"::ffff:10.0.0.0/120", true},
		{"::FFFF:10.0.0.0/120", true},
		{"::ffff:a00:0/120", true},
		{"0:0:0:0:0:ffff:a00:0/120", true},
		{"0000:0000:0000:0000:0000:ffff:0a00:0000/120", true},
		{"0::ffff:a00:0/120", true},
		{"::0:ffff:a00:0/120", true},
		{"0:0:0:0:0:ffff::/96", true},
		{"::ffff:0:0/96", true},
		{"::ffff:10.0.0.1", true},
		{"::ffff:1/128", false},
		{"::ffff:0:0:1/128", false},
		{"::/0", false},
		{"fd00::ffff:a00:1/128", false},
		{"10.0.0.0/24", false},
		{"ffff::/16", false},
		{"fd00:10::/64", false},
	} {
		addr := tc.text
		if i := strings.IndexByte(addr, '/'); i >= 0 {
			addr = addr[:i]
		}
		parsed := netip.MustParseAddr(addr)
		if parsed.Is4In6() != tc.mapped {
			t.Fatalf("test case %s: the parser says mapped=%v", tc.text, parsed.Is4In6())
		}
		if got := iprange.MatchString(tc.text); got != tc.mapped {
			t.Errorf("iprange rule on %s: refused=%v, want %v", tc.text, got, tc.mapped)
		}
		if got := exclude.MatchString(tc.text); got != tc.mapped {
			t.Errorf("exclude rule on %s: refused=%v, want %v", tc.text, got, tc.mapped)
		}
		if got := exclude.MatchString("::1-" + tc.text); got != tc.mapped {
			t.Errorf("exclude rule on the range ::1-%s: refused=%v, want %v", tc.text, got, tc.mapped)
		}
	}
}
