package v1

import (
	"net/netip"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestAllocationName(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want string
	}{
		{"10.0.0.5", "10.0.0.5"},
		{"0.0.0.0", "0.0.0.0"},
		{"255.255.255.255", "255.255.255.255"},
		{"fd00::5", "fd00-0000-0000-0000-0000-0000-0000-0005"},
		{"FD00:10::ABCD", "fd00-0010-0000-0000-0000-0000-0000-abcd"},
		{"::", "0000-0000-0000-0000-0000-0000-0000-0000"},
		{"::1", "0000-0000-0000-0000-0000-0000-0000-0001"},
		{"::ffff:10.0.0.1", "10.0.0.1"},
		{"fe80::1%eth0", "fe80-0000-0000-0000-0000-0000-0000-0001"},
	} {
		got := AllocationName(netip.MustParseAddr(tc.addr))
		if got != tc.want {
			t.Errorf("AllocationName(%s) = %q, want %q", tc.addr, got, tc.want)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("AllocationName(%s) = %q is not an object name: %v", tc.addr, got, errs)
		}
		back, ok := AddressOfAllocationName(got)
		if !ok || back != netip.MustParseAddr(tc.addr).WithZone("").Unmap() {
			t.Errorf("AddressOfAllocationName(%q) = %v, %v; want %s", got, back, ok, tc.addr)
		}
	}
	if got := AllocationName(netip.Addr{}); got != "" {
		t.Errorf("AllocationName of the zero Addr = %q, want empty", got)
	}
}

// TestAddressOfAllocationNameRefusesOtherSpellings: only the one spelling AllocationName writes
// names an address; any other would let two objects hold one address.
func TestAddressOfAllocationNameRefusesOtherSpellings(t *testing.T) {
	for _, name := range []string{
		"",
		"010.0.0.5",
		"10.0.0",
		"10.0.0.256",
		"FD00-0000-0000-0000-0000-0000-0000-0005",
		"fd00--5",
		"fd00-0-0-0-0-0-0-5",
		"0000-0000-0000-0000-0000-ffff-0a00-0001", // mapped: named as 10.0.0.1
		"--ffff-10.0.0.1",
		"fe80-0000-0000-0000-0000-0000-0000-0001%eth0",
		"fd00:0000:0000:0000:0000:0000:0000:0005",
		"fd00-0000-0000-0000-0000-0000-0000-0005-",
		"range-a",
	} {
		if addr, ok := AddressOfAllocationName(name); ok {
			t.Errorf("AddressOfAllocationName(%q) = %s; want refused", name, addr)
		}
	}
}

func TestRangeLabelValue(t *testing.T) {
	short := "harvester-vlan10"
	if got := RangeLabelValue(short); got != short {
		t.Errorf("RangeLabelValue(%q) = %q, want it unchanged", short, got)
	}
	exact := strings.Repeat("a", 63)
	if got := RangeLabelValue(exact); got != exact {
		t.Errorf("a 63-character name became %q", got)
	}
	long1 := strings.Repeat("a", 51) + "-b.c" + strings.Repeat("x", 100)
	long2 := strings.Repeat("a", 51) + "-b.c" + strings.Repeat("y", 100)
	v1, v2 := RangeLabelValue(long1), RangeLabelValue(long2)
	if v1 == v2 {
		t.Errorf("two long names with one prefix share the label value %q", v1)
	}
	for _, v := range []string{v1, v2, RangeLabelValue(strings.Repeat("a", 51) + "." + strings.Repeat("z", 200))} {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("RangeLabelValue gave %q, not a label value: %v", v, errs)
		}
		if !strings.HasPrefix(v, strings.Repeat("a", 51)) {
			t.Errorf("RangeLabelValue gave %q, which does not start with the name", v)
		}
	}
	if RangeLabelValue(long1) != v1 {
		t.Error("RangeLabelValue is not stable")
	}
}

// FuzzAllocationName: every address has a valid object name that maps back to it, and every name
// that maps to an address is the one name of that address.
func FuzzAllocationName(f *testing.F) {
	f.Add([]byte{10, 0, 0, 5}, "10.0.0.5")
	f.Add([]byte{0xfd, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}, "fd00-0010-0000-0000-0000-0000-0000-0005")
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}, "0000-0000-0000-0000-0000-ffff-0a00-0001")
	f.Add([]byte{}, "FD00--1")
	f.Fuzz(func(t *testing.T, raw []byte, name string) {
		if addr, ok := netip.AddrFromSlice(raw); ok {
			n := AllocationName(addr)
			if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
				t.Fatalf("AllocationName(%s) = %q is not an object name: %v", addr, n, errs)
			}
			back, ok := AddressOfAllocationName(n)
			if !ok || back != addr.Unmap() {
				t.Fatalf("round trip of %s through %q gave %v, %v", addr, n, back, ok)
			}
		}
		if addr, ok := AddressOfAllocationName(name); ok {
			if AllocationName(addr) != name {
				t.Fatalf("%q names %s, whose name is %q", name, addr, AllocationName(addr))
			}
			if addr.Is4In6() || addr.Zone() != "" {
				t.Fatalf("%q names %s, which is not a canonical address", name, addr)
			}
		}
	})
}
