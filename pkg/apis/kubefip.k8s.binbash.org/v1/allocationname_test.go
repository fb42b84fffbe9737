package v1

import (
	"net/netip"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestAllocationName(t *testing.T) {
	t.Parallel()
	site := AddressSpace{HarvesterClusterName: "harvester2", HarvesterNetworkName: "default/vlan10"}
	hash := site.Hash()
	for _, tc := range []struct {
		addr string
		text string
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
		addr := netip.MustParseAddr(tc.addr)
		if got := AllocationAddressText(addr); got != tc.text {
			t.Errorf("AllocationAddressText(%s) = %q, want %q", tc.addr, got, tc.text)
		}
		got := AllocationName(site, addr)
		if want := tc.text + "." + hash; got != want {
			t.Errorf("AllocationName(%s) = %q, want %q", tc.addr, got, want)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("AllocationName(%s) = %q is not an object name: %v", tc.addr, got, errs)
		}
		if errs := validation.IsValidLabelValue(tc.text); len(errs) > 0 {
			t.Errorf("AllocationAddressText(%s) = %q is not a label value: %v", tc.addr, tc.text, errs)
		}
		back, ok := ParseAllocationName(got)
		if !ok || back.Addr != addr.WithZone("").Unmap() || back.Space != hash {
			t.Errorf("ParseAllocationName(%q) = %+v, %v; want %s in %s", got, back, ok, tc.addr, hash)
		}
		legacy, ok := ParseAllocationName(tc.text)
		if !ok || legacy.Addr != addr.WithZone("").Unmap() || legacy.Space != "" {
			t.Errorf("ParseAllocationName(%q), a name before address spaces, = %+v, %v; want %s in no space", tc.text, legacy, ok, tc.addr)
		}
	}
	if got := AllocationName(site, netip.Addr{}); got != "" {
		t.Errorf("AllocationName of the zero Addr = %q, want empty", got)
	}
}

// TestSpaceHash: the same private address on two sites gets two names, one site one name, and no
// pair of names runs into another by moving a character across the boundary.
func TestSpaceHash(t *testing.T) {
	t.Parallel()
	a := AddressSpace{HarvesterClusterName: "harvester1", HarvesterNetworkName: "vlan10"}
	b := AddressSpace{HarvesterClusterName: "harvester2", HarvesterNetworkName: "vlan10"}
	shifted := AddressSpace{HarvesterClusterName: "harvester1v", HarvesterNetworkName: "lan10"}
	addr := netip.MustParseAddr("192.168.10.7")
	if AllocationName(a, addr) == AllocationName(b, addr) || a.Hash() == shifted.Hash() || a.Hash() == (AddressSpace{}).Hash() {
		t.Errorf("two spaces share a hash: %s %s %s %s", a.Hash(), b.Hash(), shifted.Hash(), AddressSpace{}.Hash())
	}
	if a.Hash() != (AddressSpace{HarvesterClusterName: "harvester1", HarvesterNetworkName: "vlan10"}).Hash() {
		t.Error("Hash is not stable")
	}
	if len(a.Hash()) != SpaceHashDigits {
		t.Errorf("Hash %q has %d digits, want %d", a.Hash(), len(a.Hash()), SpaceHashDigits)
	}
	r := &FloatingIPRange{}
	r.Annotations = map[string]string{AnnotationHarvesterClusterName: " harvester1 ", AnnotationHarvesterNetworkName: "vlan10\n"}
	if got := SpaceOf(r); got != a {
		t.Errorf("SpaceOf trims the annotations: got %+v, want %+v", got, a)
	}
	if got := (AddressSpace{}).String(); got != "-/-" {
		t.Errorf("the space of no annotations reads %q", got)
	}
}

// TestParseAllocationNameRefusesOtherSpellings: only the one spelling AllocationName writes
// names an address; any other would let two objects hold one address.
func TestParseAllocationNameRefusesOtherSpellings(t *testing.T) {
	t.Parallel()
	hash := AddressSpace{}.Hash()
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
		"10.0.0.5." + strings.ToUpper(hash),
		"10.0.0.5." + hash[:9],
		"10.0.0.5." + hash + "0",
		"10.0.0.5.." + hash,
		"010.0.0.5." + hash,
		"." + hash,
		hash,
	} {
		if s, ok := ParseAllocationName(name); ok {
			t.Errorf("ParseAllocationName(%q) = %+v; want refused", name, s)
		}
	}
}

func TestLabelValue(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "harvester1", "default.vlan10", "Harvester_Site-2"} {
		if got := LabelValue(s); got != s {
			t.Errorf("LabelValue(%q) = %q, want it unchanged", s, got)
		}
	}
	for _, s := range []string{"default/vlan10", "Site 2 (Berlin)", "-edge-", "/", strings.Repeat("x", 64), "ünïcode"} {
		got := LabelValue(s)
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 || got == "" {
			t.Errorf("LabelValue(%q) = %q, not a label value: %v", s, got, errs)
		}
		if got == s {
			t.Errorf("LabelValue(%q) kept a value that is not a label value", s)
		}
	}
	if LabelValue("default/vlan10") == LabelValue("default-vlan10") {
		t.Error("two strings share a label value")
	}
}

func TestRangeLabelValue(t *testing.T) {
	t.Parallel()
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
	f.Add([]byte{10, 0, 0, 5}, "10.0.0.5.0123456789")
	space := AddressSpace{HarvesterClusterName: "harvester1", HarvesterNetworkName: "vlan10"}
	f.Fuzz(func(t *testing.T, raw []byte, name string) {
		if addr, ok := netip.AddrFromSlice(raw); ok {
			n := AllocationName(space, addr)
			if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
				t.Fatalf("AllocationName(%s) = %q is not an object name: %v", addr, n, errs)
			}
			back, ok := ParseAllocationName(n)
			if !ok || back.Addr != addr.Unmap() || back.Space != space.Hash() {
				t.Fatalf("round trip of %s through %q gave %v, %v", addr, n, back, ok)
			}
		}
		if s, ok := ParseAllocationName(name); ok {
			want := AllocationAddressText(s.Addr)
			if s.Space != "" {
				want += "." + s.Space
			}
			if want != name {
				t.Fatalf("%q names %s in %q, whose name is %q", name, s.Addr, s.Space, want)
			}
			if s.Addr.Is4In6() || s.Addr.Zone() != "" {
				t.Fatalf("%q names %s, which is not a canonical address", name, s.Addr)
			}
		}
	})
}
