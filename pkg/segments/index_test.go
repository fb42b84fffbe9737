package segments

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func testView() *View {
	v := &View{Cluster: testCluster,
		Networks: []Network{
			{Namespace: "prod", Name: "vlan10", Segment: seg("mgmt", 10)},
			{Namespace: "default", Name: "vlan10", Segment: seg("mgmt", 10)},
			{Namespace: "default", Name: "vlan20", Segment: seg("mgmt", 20)},
			{Namespace: "default", Name: "v6", Segment: seg("data", 0)},
		},
		Claims: []Claim{
			{Kind: KindLoadBalancerPool, Object: "IPPool a", First: addr("10.0.10.100"), Last: addr("10.0.10.150"), Segment: seg("mgmt", 10)},
			{Kind: KindVM, Object: "VirtualMachineInstance default/n1", First: addr("10.0.10.5"), Last: addr("10.0.10.5"), Guest: "g1", Segment: seg("mgmt", 10)},
			{Kind: KindVM, Object: "VirtualMachineInstance default/n2", First: addr("10.0.10.60"), Last: addr("10.0.10.60"), Segment: seg("mgmt", 10)},
			{Kind: KindDHCPPool, Object: "IPPool default/d", First: addr("10.0.20.10"), Last: addr("10.0.20.90"), Segment: seg("mgmt", 20)},
			{Kind: KindGlobalLoadBalancerPool, Object: "IPPool global", First: addr("10.0.10.140"), Last: addr("10.0.10.160")},
			{Kind: KindLoadBalancerPool, Object: "IPPool six", First: addr("fd00::100"), Last: addr("fd00::1ff"), Segment: seg("data", 0)},
			{Kind: KindVM, Object: "VirtualMachineInstance default/n3", First: addr("fd00::5"), Last: addr("fd00::5"), Segment: seg("data", 0)},
		},
	}
	v.Reindex()
	return v
}

func TestNetworkNamed(t *testing.T) {
	v := testView()
	tests := []struct {
		name, want, why string
	}{
		{name: "default/vlan10", want: "default/vlan10"},
		{name: " vlan20 ", want: "default/vlan20"},
		{name: "vlan10", why: `"vlan10" names 2 VM networks of Harvester cluster c-m-harv1 (default/vlan10, prod/vlan10): write namespace/name`},
		{name: "vlan30", why: `Harvester cluster c-m-harv1 has no VM network named "vlan30"`},
		{name: "prod/vlan20", why: `Harvester cluster c-m-harv1 has no VM network "prod/vlan20"`},
		{name: "a/b/c", why: `"a/b/c" is not namespace/name of a VM network`},
		{name: "", why: `"" is not the name of a VM network`},
	}
	for _, tt := range tests {
		n, ok, why := v.NetworkNamed(tt.name)
		if ok != (tt.want != "") || (ok && n.String() != tt.want) || why != tt.why {
			t.Errorf("NetworkNamed(%q) = %v %v %q, want %q %q", tt.name, n, ok, why, tt.want, tt.why)
		}
	}
	v.Limited = "NetworkAttachmentDefinitions: MaxPages (1 pages)"
	if _, _, why := v.NetworkNamed("vlan30"); !strings.HasSuffix(why, "(its NetworkAttachmentDefinitions were not all read)") {
		t.Errorf("a limited read is not said: %q", why)
	}
	// A view not indexed answers the same.
	plain := *v
	plain.idx = nil
	for _, name := range []string{"default/vlan10", "vlan10", "vlan20", "nope"} {
		n1, ok1, why1 := v.NetworkNamed(name)
		n2, ok2, why2 := plain.NetworkNamed(name)
		if n1 != n2 || ok1 != ok2 || why1 != why2 {
			t.Errorf("indexed and plain views disagree on %q", name)
		}
	}
}

func TestOverlapping(t *testing.T) {
	v := testView()
	objects := func(cs []Claim) string {
		var s []string
		for _, c := range cs {
			s = append(s, c.Object)
		}
		return strings.Join(s, ", ")
	}
	tests := []struct {
		name        string
		seg         Segment
		first, last string
		want        string
	}{
		{"a /24 on VLAN 10: VMs, the pool and the global pool", seg("mgmt", 10), "10.0.10.0", "10.0.10.255",
			"IPPool global, VirtualMachineInstance default/n1, VirtualMachineInstance default/n2, IPPool a"},
		{"a run inside a pool", seg("mgmt", 10), "10.0.10.120", "10.0.10.130", "IPPool a"},
		{"touching the end of a run", seg("mgmt", 10), "10.0.10.160", "10.0.10.170", "IPPool global"},
		{"a single address", seg("mgmt", 10), "10.0.10.60", "10.0.10.60", "VirtualMachineInstance default/n2"},
		{"free", seg("mgmt", 10), "10.0.10.6", "10.0.10.59", ""},
		{"another segment does not see VLAN 10's", seg("mgmt", 20), "10.0.10.0", "10.0.20.255", "IPPool global, IPPool default/d"},
		{"IPv6", seg("data", 0), "fd00::", "fd00::1ff", "VirtualMachineInstance default/n3, IPPool six"},
		{"IPv6 never sees IPv4", seg("mgmt", 10), "::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
		{"IPv4-mapped is IPv4", seg("mgmt", 10), "::ffff:10.0.10.5", "::ffff:10.0.10.5", "VirtualMachineInstance default/n1"},
		{"the zero segment: the global pools", Segment{}, "10.0.0.0", "10.0.255.255", "IPPool global"},
		{"mixed families", seg("mgmt", 10), "10.0.10.0", "fd00::", ""},
		{"backwards", seg("mgmt", 10), "10.0.10.255", "10.0.10.0", ""},
	}
	for _, tt := range tests {
		got := v.Overlapping(tt.seg, addr(tt.first), addr(tt.last))
		if objects(got) != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, objects(got), tt.want)
		}
	}
	if got := v.Overlapping(seg("mgmt", 10), netip.Addr{}, addr("10.0.0.1")); got != nil {
		t.Errorf("an invalid address overlaps %v", got)
	}
}

// TestOverlappingAgreesWithAScan: on random claims, the index finds what looking at every claim
// finds.
func TestOverlappingAgreesWithAScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	segs := []Segment{{}, seg("mgmt", 0), seg("mgmt", 10)}
	randAddr := func(v6 bool) netip.Addr {
		if v6 {
			return netip.AddrFrom16([16]byte{0xfd, 15: byte(rng.IntN(256))})
		}
		return netip.AddrFrom4([4]byte{10, 0, 0, byte(rng.IntN(256))})
	}
	for round := 0; round < 200; round++ {
		v := &View{}
		for i := rng.IntN(60); i > 0; i-- {
			v6 := rng.IntN(4) == 0
			a, b := randAddr(v6), randAddr(v6)
			if b.Less(a) {
				a, b = b, a
			}
			if rng.IntN(2) == 0 {
				b = a
			}
			v.Claims = append(v.Claims, Claim{Kind: KindVM, Object: string(rune('a' + i%26)), First: a, Last: b, Segment: segs[rng.IntN(len(segs))]})
		}
		plain := &View{Claims: slices.Clone(v.Claims)}
		v.Reindex()
		for q := 0; q < 20; q++ {
			v6 := rng.IntN(4) == 0
			a, b := randAddr(v6), randAddr(v6)
			if b.Less(a) {
				a, b = b, a
			}
			s := segs[rng.IntN(len(segs))]
			if got, want := v.Overlapping(s, a, b), plain.Overlapping(s, a, b); !slices.Equal(got, want) {
				t.Fatalf("round %d: %v-%v on %v: index %v, scan %v", round, a, b, s, got, want)
			}
		}
	}
}

// BenchmarkOverlapping: a /24 against thousands of claims on its segment.
func BenchmarkOverlapping(b *testing.B) {
	v := &View{}
	for i := 0; i < 8000; i++ {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 8 & 0x1f), byte(i), 7})
		v.Claims = append(v.Claims, Claim{Kind: KindVM, First: a, Last: a, Segment: seg("mgmt", 10)})
	}
	v.Claims = append(v.Claims, Claim{Kind: KindLoadBalancerPool, First: addr("10.0.0.0"), Last: addr("10.31.255.255"), Segment: seg("mgmt", 10)})
	v.Reindex()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got := v.Overlapping(seg("mgmt", 10), addr("10.3.4.0"), addr("10.3.4.255")); len(got) != 2 {
			b.Fatalf("%d claims", len(got))
		}
	}
}

// TestInterfacesOf: a guest's interfaces are found alike by the index and, in a view built by
// hand and not reindexed, one by one; a VM of no guest is no guest's.
func TestInterfacesOf(t *testing.T) {
	v := &View{Interfaces: []Interface{
		{VM: "default/b-pool1-x", Guest: "b", Network: "default/vlan10", InterfaceName: "enp1s0"},
		{VM: "default/a-pool1-x", Guest: "a", Network: "default/vlan20", InterfaceName: "enp2s0"},
		{VM: "default/plain", Network: "default/vlan10"},
		{VM: "default/a-pool1-x", Guest: "a", Network: "default/vlan10", InterfaceName: "enp1s0"},
	}}
	names := func(in []Interface) []string {
		var out []string
		for _, i := range in {
			out = append(out, i.VM+" "+i.Network)
		}
		slices.Sort(out)
		return out
	}
	want := []string{"default/a-pool1-x default/vlan10", "default/a-pool1-x default/vlan20"}
	if got := names(v.InterfacesOf("a")); !slices.Equal(got, want) {
		t.Errorf("by hand: %v, want %v", got, want)
	}
	v.Reindex()
	if got := names(v.InterfacesOf("a")); !slices.Equal(got, want) {
		t.Errorf("indexed: %v, want %v", got, want)
	}
	if got := v.InterfacesOf(""); len(got) != 0 {
		t.Errorf("the guest \"\" has %v", got)
	}
}
