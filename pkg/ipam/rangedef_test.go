package ipam

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

func TestNewPoolErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cidr    string
		exclude []string
		want    error
		mention string // the error must name the culprit
	}{
		{"empty", "", nil, errInvalidPrefix, "empty"},
		{"garbage", "foo", nil, errInvalidPrefix, `"foo"`},
		{"no length", "10.0.0.0", nil, errInvalidPrefix, "10.0.0.0"},
		{"too long v4", "10.0.0.0/33", nil, errInvalidPrefix, "10.0.0.0/33"},
		{"too long v6", "2001:db8::/129", nil, errInvalidPrefix, "2001:db8::/129"},
		{"negative", "10.0.0.0/-1", nil, errInvalidPrefix, "10.0.0.0/-1"},
		{"spaces", " 10.0.0.0/24", nil, errInvalidPrefix, "10.0.0.0/24"},
		{"zone", "fe80::%eth0/64", nil, errInvalidPrefix, "fe80::%eth0/64"},
		{"host bits", "10.0.0.5/24", nil, errHostBitsSet, "10.0.0.0/24"},
		{"host bits v6", "2001:db8::1/64", nil, errHostBitsSet, "2001:db8::/64"},
		{"exclude empty", "10.0.0.0/24", []string{""}, errInvalidExclude, "empty"},
		{"exclude garbage", "10.0.0.0/24", []string{"10.0.0.1", "bar"}, errInvalidExclude, `"bar"`},
		{"exclude reversed range", "10.0.0.0/24", []string{"10.0.0.9-10.0.0.1"}, errInvalidExclude, "10.0.0.9"},
		{"exclude half range", "10.0.0.0/24", []string{"10.0.0.9-"}, errInvalidExclude, "10.0.0.9-"},
		{"exclude mixed range", "10.0.0.0/24", []string{"10.0.0.1-::1"}, errInvalidExclude, "10.0.0.1-::1"},
		{"exclude bad cidr", "10.0.0.0/24", []string{"10.0.0.0/40"}, errInvalidExclude, "10.0.0.0/40"},
		{"exclude host bits", "10.0.0.0/24", []string{"10.0.0.5/30"}, errHostBitsSet, "10.0.0.4/30"},
		{"exclude zone", "fe80::/64", []string{"fe80::1%eth0"}, errInvalidExclude, "fe80::1%eth0"},
		{"exclude v6 in v4", "10.0.0.0/24", []string{"2001:db8::1"}, ErrFamilyMismatch, "2001:db8::1"},
		{"exclude v6 cidr in v4", "10.0.0.0/24", []string{"2001:db8::/120"}, ErrFamilyMismatch, "2001:db8::/120"},
		{"exclude v4 in v6", "2001:db8::/64", []string{"10.0.0.1-10.0.0.2"}, ErrFamilyMismatch, "10.0.0.1-10.0.0.2"},
		{"exclude mapped in v4", "10.0.0.0/24", []string{"::ffff:10.0.0.1"}, errMappedAddress, "::ffff:10.0.0.1"},
		{"mapped v6 prefix", "::ffff:10.0.0.0/120", nil, errMappedAddress, "::ffff:10.0.0.0/120"},
		{"mapped v6 prefix, long form", "0:0:0:0:0:ffff:a00:0/120", nil, errMappedAddress, "0:0:0:0:0:ffff:a00:0/120"},
		{"exclude mapped in v6", "::/0", []string{"::ffff:10.0.0.1"}, errMappedAddress, "::ffff:10.0.0.1"},
		{"exclude mapped range in v6", "::/0", []string{"::1-::ffff:10.0.0.1"}, errMappedAddress, "::ffff:10.0.0.1"},
		{"exclude mapped prefix in v6", "::/0", []string{"::ffff:10.0.0.0/120"}, errMappedAddress, "::ffff:10.0.0.0/120"},
		{"exclude outside", "10.0.0.0/24", []string{"10.0.1.1"}, errExcludeOutsideRange, "10.0.1.1"},
		{"exclude straddles", "10.0.0.0/24", []string{"10.0.0.250-10.0.1.5"}, errExcludeOutsideRange, "10.0.0.250-10.0.1.5"},
		{"exclude bigger", "10.0.0.0/24", []string{"10.0.0.0/23"}, errExcludeOutsideRange, "10.0.0.0/23"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPool(tc.cidr, tc.exclude)
			if !errors.Is(err, tc.want) || p != nil {
				t.Fatalf("NewPool(%q, %q) = %v, %v; want %v", tc.cidr, tc.exclude, p, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

func TestExcludeForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		exclude  string
		from, to string // the excluded addresses
		capacity int64
	}{
		{"10.0.0.5", "10.0.0.5", "10.0.0.5", 253},
		{"10.0.0.8/30", "10.0.0.8", "10.0.0.11", 250},
		{"10.0.0.20-10.0.0.29", "10.0.0.20", "10.0.0.29", 244},
		{"10.0.0.7-10.0.0.7", "10.0.0.7", "10.0.0.7", 253},
		// The network and broadcast addresses stay reserved rather than excluded.
		{"10.0.0.0/24", "10.0.0.1", "10.0.0.254", 0},
	}
	for _, tc := range tests {
		p := mustPool(t, "10.0.0.0/24", tc.exclude)
		from, to := netip.MustParseAddr(tc.from), netip.MustParseAddr(tc.to)
		for _, a := range []netip.Addr{from, to} {
			if err := p.Check(a); !errors.Is(err, ErrExcluded) {
				t.Errorf("exclude %q: Check(%v) = %v, want ErrExcluded", tc.exclude, a, err)
			}
		}
		for _, a := range []netip.Addr{from.Prev(), to.Next()} {
			if err := p.Check(a); errors.Is(err, ErrExcluded) {
				t.Errorf("exclude %q: Check(%v) = %v, want it not excluded", tc.exclude, a, err)
			}
		}
		if p.Capacity().Int64() != tc.capacity {
			t.Errorf("exclude %q: Capacity() = %v, want %d", tc.exclude, p.Capacity(), tc.capacity)
		}
	}
}

// TestErrorsEchoBoundedInput: an error repeats enough of a bad value to recognise it, never the
// whole of it, however long it is.
func TestErrorsEchoBoundedInput(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("1", 10<<20)
	tests := []struct {
		name    string
		cidr    string
		exclude []string
	}{
		{"cidr", huge, nil},
		{"cidr with length", "10.0.0.0/" + huge, nil},
		{"exclude address", "10.0.0.0/24", []string{huge}},
		{"exclude cidr", "10.0.0.0/24", []string{"10.0.0.0/" + huge}},
		{"exclude range", "10.0.0.0/24", []string{"10.0.0.1-" + huge}},
		{"exclude multibyte", "10.0.0.0/24", []string{strings.Repeat("é", 1<<20)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPool(tc.cidr, tc.exclude)
			if err == nil {
				t.Fatal("NewPool accepted the value")
			}
			if n := len(err.Error()); n > 4*redact.MaxValue {
				t.Errorf("error is %d bytes long, want at most %d", n, 4*redact.MaxValue)
			}
			if !strings.Contains(err.Error(), "…") {
				t.Errorf("error %.100q... does not show that the value was shortened", err)
			}
			if !utf8.ValidString(err.Error()) {
				t.Errorf("error is not valid UTF-8 after shortening")
			}
		})
	}
}
