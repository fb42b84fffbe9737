package crds

import (
	"net/netip"
	"regexp"
	"strings"
	"testing"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// allocationRules are the regular expressions of allocationValidation's CEL rules, run here with
// Go's RE2, the engine CEL's matches() uses.
type allocationRules struct {
	ipv6Name, ipv6Chars, leadingZero, ipv4, mapped, suffix *regexp.Regexp
}

func newAllocationRules() allocationRules {
	return allocationRules{
		ipv6Name:    regexp.MustCompile(allocationIPv6Name),
		ipv6Chars:   regexp.MustCompile(`^[0-9a-f:]+$`),
		leadingZero: regexp.MustCompile(`(^|:)0[0-9a-f]`),
		ipv4:        regexp.MustCompile(canonicalIPv4),
		mapped:      regexp.MustCompile("^(" + mappedAddress + ")"),
		suffix:      regexp.MustCompile(spaceSuffix),
	}
}

// admits evaluates the root and spec.address rules the way the API server does for an object
// named name with spec.address address (the ipv4/ipv6 formats aside).
func (r allocationRules) admits(name, address string) bool {
	if r.mapped.MatchString(address) {
		return false
	}
	if strings.Contains(address, ":") {
		return r.ipv6Chars.MatchString(address) && !r.leadingZero.MatchString(address) && r.ipv6Name.MatchString(name)
	}
	return r.ipv4.MatchString(address) && strings.HasPrefix(name, address+".") && len(name) == len(address)+11 && r.suffix.MatchString(name)
}

// site is the space the tests name their allocations in.
var site = v1.AddressSpace{HarvesterClusterName: "harvester1", HarvesterNetworkName: "default/vlan10"}

// TestAllocationRulesAdmitWhatTheOperatorWrites: every object the operator would create — the
// name from v1.AllocationName, the address in netip's canonical form — passes the CEL rules.
func TestAllocationRulesAdmitWhatTheOperatorWrites(t *testing.T) {
	t.Parallel()
	rules := newAllocationRules()
	for _, text := range []string{"10.0.0.5", "0.0.0.0", "255.255.255.255", "100.64.0.10", "fd00::5",
		"fd00:10::", "::", "::1", "2001:db8:0:1::ffff", "fe80::1", "::ffff:1", "ffff::"} {
		addr := netip.MustParseAddr(text)
		if !rules.admits(v1.AllocationName(site, addr), addr.String()) {
			t.Errorf("the rules refuse %s named %s", addr, v1.AllocationName(site, addr))
		}
	}
}

func TestAllocationRulesRefuse(t *testing.T) {
	t.Parallel()
	rules := newAllocationRules()
	for _, tc := range []struct{ name, address string }{
		{"10.0.0.6." + site.Hash(), "10.0.0.5"},
		{"010.0.0.5." + site.Hash(), "010.0.0.5"},
		{"10.0.0.5", "10.0.0.5"}, // a name of the releases before address spaces
		{"fd00-0000-0000-0000-0000-0000-0000-0005", "fd00::5"},
		{"10.0.0.5." + strings.ToUpper(site.Hash()), "10.0.0.5"},
		{"10.0.0.5.." + site.Hash()[1:], "10.0.0.5"},
		{"10.0.0.5." + site.Hash() + "0", "10.0.0.5"},
		{"10.0.0.55" + site.Hash()[1:], "10.0.0.5"},
		{"fd00--5." + site.Hash(), "fd00::5"},
		{"FD00-0000-0000-0000-0000-0000-0000-0005." + site.Hash(), "fd00::5"},
		{"fd00-0000-0000-0000-0000-0000-0000-0005." + site.Hash(), "FD00::5"},
		{"fd00-0000-0000-0000-0000-0000-0000-0005." + site.Hash(), "fd00::0005"},
		{"10.0.0.1." + site.Hash(), "::ffff:10.0.0.1"},
		{"0000-0000-0000-0000-0000-ffff-0a00-0001." + site.Hash(), "::ffff:a00:1"},
		{"range-a", "10.0.0.5"},
	} {
		if rules.admits(tc.name, tc.address) {
			t.Errorf("the rules admit %s with spec.address %s", tc.name, tc.address)
		}
	}
}

// FuzzAllocationRules: for any address, the operator's name and canonical text pass the rules.
func FuzzAllocationRules(f *testing.F) {
	f.Add([]byte{10, 0, 0, 5})
	f.Add([]byte{0xfd, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5})
	rules := newAllocationRules()
	f.Fuzz(func(t *testing.T, raw []byte) {
		addr, ok := netip.AddrFromSlice(raw)
		if !ok || addr.Is4In6() {
			return
		}
		if !rules.admits(v1.AllocationName(site, addr), addr.String()) {
			t.Fatalf("the rules refuse %s named %s", addr, v1.AllocationName(site, addr))
		}
	})
}
