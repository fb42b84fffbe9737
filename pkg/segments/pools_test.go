package segments

import (
	"slices"
	"testing"
)

// lbPool is a load balancer IPPool in YAML as load-balancer-harvester's testdata writes one.
func lbPool(name, labels, ranges, selector string) string {
	return "apiVersion: loadbalancer.harvesterhci.io/v1beta1\nkind: IPPool\nmetadata:\n  name: " + name + "\n" + labels +
		"spec:\n  ranges:\n" + ranges + "  selector:\n" + selector
}

func TestParseLBPool(t *testing.T) {
	scopeNS := "    scope:\n      - namespace: default\n        project: \"*\"\n        guestCluster: \"*\"\n"
	scopeAllStar := "    scope:\n      - namespace: \"*\"\n        project: \"*\"\n        guestCluster: \"*\"\n"
	onVLAN10 := "    network: default/vlan10\n" + scopeNS
	tests := []struct {
		name    string
		yaml    string
		kind    Kind
		segment Segment
		runs    []string
		object  string
		skipped bool
	}{
		{name: "global pool (webhook testdata case1): the gateway, .1 by default, is not handed out",
			yaml: lbPool("input", "", "    - subnet: 192.168.10.0/24\n", scopeAllStar),
			kind: KindGlobalLoadBalancerPool, runs: []string{"192.168.10.2-192.168.10.254"}, object: "IPPool input"},
		{name: "ranges with start and end and no network (kubevip testdata case1 ns-2)",
			yaml: lbPool("ns-2", "", "    - rangeStart: 192.168.40.1\n      rangeEnd: 192.168.40.10\n      subnet: 192.168.40.0/28\n"+
				"    - rangeStart: 192.168.50.10\n      rangeEnd: 192.168.50.20\n      subnet: 192.168.50.0/27\n",
				"    scope:\n      - namespace: ns-2\n        project: \"*\"\n        guestCluster: \"*\"\n"),
			kind: KindGlobalLoadBalancerPool, runs: []string{"192.168.40.2-192.168.40.10", "192.168.50.10-192.168.50.20"}},
		{name: "pool on a network",
			yaml: lbPool("vlan10", "", "    - subnet: 10.0.10.0/24\n      rangeStart: 10.0.10.100\n      rangeEnd: 10.0.10.150\n", onVLAN10),
			kind: KindLoadBalancerPool, segment: seg("mgmt", 10), runs: []string{"10.0.10.100-10.0.10.150"}, object: "IPPool vlan10"},
		{name: "a gateway inside the range splits it",
			yaml: lbPool("gw", "", "    - subnet: 10.0.10.0/24\n      rangeStart: 10.0.10.100\n      rangeEnd: 10.0.10.150\n      gateway: 10.0.10.120\n", onVLAN10),
			kind: KindLoadBalancerPool, segment: seg("mgmt", 10), runs: []string{"10.0.10.100-10.0.10.119", "10.0.10.121-10.0.10.150"}},
		{name: "start above end is swapped, as MakeRange does",
			yaml: lbPool("swap", "", "    - subnet: 10.0.10.0/24\n      rangeStart: 10.0.10.150\n      rangeEnd: 10.0.10.100\n", onVLAN10),
			kind: KindLoadBalancerPool, segment: seg("mgmt", 10), runs: []string{"10.0.10.100-10.0.10.150"}},
		{name: "labelled global by the webhook, whatever its network",
			yaml: lbPool("g", "  labels:\n    loadbalancer.harvesterhci.io/global-ip-pool: \"true\"\n", "    - subnet: 10.0.10.0/30\n", onVLAN10),
			kind: KindGlobalLoadBalancerPool, runs: []string{"10.0.10.2"}},
		{name: "network not read: may be on any segment like a global pool, and says so",
			yaml: lbPool("lost", "", "    - subnet: 10.0.20.0/29\n", "    network: default/vlan20\n"+scopeNS),
			kind: KindGlobalLoadBalancerPool, runs: []string{"10.0.20.2-10.0.20.6"}, object: "IPPool lost (network default/vlan20 not found)"},
		{name: "IPv6 has no broadcast: the last address is handed out",
			yaml: lbPool("v6", "", "    - subnet: fd00:10::/64\n", onVLAN10),
			kind: KindLoadBalancerPool, segment: seg("mgmt", 10), runs: []string{"fd00:10::2-fd00:10::ffff:ffff:ffff:ffff"}},
		{name: "an IPv4 /32 is its one address",
			yaml: lbPool("one", "", "    - subnet: 10.0.10.9/32\n", onVLAN10),
			kind: KindLoadBalancerPool, segment: seg("mgmt", 10), runs: []string{"10.0.10.9"}},
		{name: "an IPv4 /31: the swapped defaults less the gateway",
			yaml: lbPool("p2p", "", "    - subnet: 10.0.10.8/31\n", onVLAN10),
			kind: KindLoadBalancerPool, segment: seg("mgmt", 10), runs: []string{"10.0.10.8"}},
		{name: "an IPv6 /128 is its one address",
			yaml: lbPool("one6", "", "    - subnet: fd00::9/128\n", onVLAN10),
			kind: KindLoadBalancerPool, segment: seg("mgmt", 10), runs: []string{"fd00::9"}},
		{name: "a huge range is one run",
			yaml: lbPool("big", "", "    - subnet: 10.0.0.0/8\n", onVLAN10),
			kind: KindLoadBalancerPool, segment: seg("mgmt", 10), runs: []string{"10.0.0.2-10.255.255.254"}},
		{name: "start is the network address", skipped: true,
			yaml: lbPool("bad", "", "    - subnet: 10.0.10.0/24\n      rangeStart: 10.0.10.0\n", onVLAN10)},
		{name: "end outside the subnet", skipped: true,
			yaml: lbPool("bad", "", "    - subnet: 10.0.10.0/24\n      rangeEnd: 10.0.11.1\n", onVLAN10)},
		{name: "end of the other family", skipped: true,
			yaml: lbPool("bad", "", "    - subnet: 10.0.10.0/24\n      rangeEnd: fd00::1\n", onVLAN10)},
		{name: "one bad range of two: the allocator refuses the pool", skipped: true,
			yaml: lbPool("bad", "", "    - subnet: 10.0.10.0/24\n    - subnet: 10.0.300.0/24\n", onVLAN10)},
		{name: "no ranges", skipped: true, yaml: lbPool("bad", "", "    []\n", onVLAN10)},
		{name: "network not namespace/name", skipped: true,
			yaml: lbPool("bad", "", "    - subnet: 10.0.10.0/24\n", "    network: vlan10\n"+scopeNS)},
		{name: "a name the API server would not allow", skipped: true,
			yaml: lbPool("Bad Name", "", "    - subnet: 10.0.10.0/24\n", onVLAN10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims, ok := parsed(t, parseLBPool, tt.yaml, tt.skipped)
			if !ok {
				return
			}
			var runs []string
			for _, c := range claims {
				runs = append(runs, run(c))
				if c.Kind != tt.kind || c.Segment != tt.segment || (tt.object != "" && c.Object != tt.object) {
					t.Errorf("claim %+v, want kind %s on %+v, object %q", c, tt.kind, tt.segment, tt.object)
				}
			}
			if !slices.Equal(runs, tt.runs) {
				t.Errorf("runs %v, want %v", runs, tt.runs)
			}
		})
	}
}

// dhcpPool is vm-dhcp-controller v1.8.1's README example, with the fields replaced.
func dhcpPool(network, cidr, start, end, server, router string) string {
	y := "apiVersion: network.harvesterhci.io/v1alpha1\nkind: IPPool\nmetadata:\n  name: net-48\n  namespace: default\nspec:\n  ipv4Config:\n" +
		"    serverIP: " + server + "\n    cidr: " + cidr + "\n    pool:\n"
	if start != "" {
		y += "      start: " + start + "\n"
	}
	if end != "" {
		y += "      end: " + end + "\n"
	}
	y += "      exclude:\n      - 192.168.48.81\n      - 192.168.48.90\n"
	if router != "" {
		y += "    router: " + router + "\n"
	}
	return y + "    dns:\n    - 1.1.1.1\n    domainName: aibao.moe\n    domainSearch:\n    - aibao.moe\n    ntp:\n    - pool.ntp.org\n    leaseTime: 300\n" +
		"  networkName: " + network + "\n"
}

func TestParseDHCPPool(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		segment Segment
		runs    []string
		objects []string
		skipped bool
	}{
		{name: "the README's pool: start to end, server and router",
			yaml:    dhcpPool("default/vlan10", "192.168.48.0/24", "192.168.48.81", "192.168.48.90", "192.168.48.77", "192.168.48.1"),
			segment: seg("mgmt", 10), runs: []string{"192.168.48.81-192.168.48.90", "192.168.48.77", "192.168.48.1"},
			objects: []string{"IPPool default/net-48", "IPPool default/net-48 (DHCP server)", "IPPool default/net-48 (router)"}},
		{name: "start and end default as the mutator sets them; no router",
			yaml:    dhcpPool("default/vlan10", "192.168.48.0/24", "", "", "192.168.48.1", ""),
			segment: seg("mgmt", 10), runs: []string{"192.168.48.1-192.168.48.254", "192.168.48.1"}},
		{name: "a bare network name is in namespace default, as the webhook reads it",
			yaml:    dhcpPool("vlan10", "192.168.48.0/24", "192.168.48.81", "192.168.48.90", "192.168.48.77", ""),
			segment: seg("mgmt", 10), runs: []string{"192.168.48.81-192.168.48.90", "192.168.48.77"}},
		{name: "network not read: its agent cannot run", skipped: true,
			yaml: dhcpPool("prod/vlan99", "192.168.48.0/24", "192.168.48.81", "192.168.48.90", "192.168.48.77", "")},
		{name: "start above end: the IPAM refuses it", skipped: true,
			yaml: dhcpPool("default/vlan10", "192.168.48.0/24", "192.168.48.90", "192.168.48.81", "192.168.48.77", "")},
		{name: "end is the broadcast", skipped: true,
			yaml: dhcpPool("default/vlan10", "192.168.48.0/24", "192.168.48.81", "192.168.48.255", "192.168.48.77", "")},
		{name: "server outside the cidr", skipped: true,
			yaml: dhcpPool("default/vlan10", "192.168.48.0/24", "192.168.48.81", "192.168.48.90", "192.168.49.77", "")},
		{name: "IPv6 is not served", skipped: true,
			yaml: dhcpPool("default/vlan10", "fd00::/64", "fd00::10", "fd00::20", "fd00::1", "")},
		{name: "bad address", skipped: true,
			yaml: dhcpPool("default/vlan10", "192.168.48.0/24", "192.168.48.x", "192.168.48.90", "192.168.48.77", "")},
		{name: "network with two slashes", skipped: true,
			yaml: dhcpPool("a/b/c", "192.168.48.0/24", "192.168.48.81", "192.168.48.90", "192.168.48.77", "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims, ok := parsed(t, parseDHCPPool, tt.yaml, tt.skipped)
			if !ok {
				return
			}
			var runs, objects []string
			for _, c := range claims {
				runs, objects = append(runs, run(c)), append(objects, c.Object)
				if c.Kind != KindDHCPPool || c.Segment != tt.segment {
					t.Errorf("claim %+v, want a DHCP pool's on %+v", c, tt.segment)
				}
			}
			if !slices.Equal(runs, tt.runs) {
				t.Errorf("runs %v, want %v", runs, tt.runs)
			}
			if tt.objects != nil && !slices.Equal(objects, tt.objects) {
				t.Errorf("objects %q, want %q", objects, tt.objects)
			}
		})
	}
}

// parsed parses the pool in yaml and checks that it was skipped, or not, as the case says; ok is
// false when the case is done (a skipped pool).
func parsed(t *testing.T, parse func([]byte, segmentFunc) ([]Claim, error), yaml string, skipped bool) ([]Claim, bool) {
	t.Helper()
	claims, err := parse(fromYAML(t, yaml), segments)
	switch {
	case skipped && err == nil:
		t.Fatalf("parsed %v, want it skipped", claims)
	case !skipped && err != nil:
		t.Fatalf("skipped: %v", err)
	}
	return claims, !skipped
}
