package segments

import (
	"net/netip"
	"testing"
)

func TestParseNAD(t *testing.T) {
	route := map[string]string{annotationRoute: `{"mode":"auto","serverIPAddr":"10.0.10.2","cidr":"10.0.10.0/24","gateway":"10.0.10.1","connectivity":"true"}`}
	trunk := `{"cniVersion":"0.3.1","name":"net1-vlan","type":"bridge","bridge":"test-cn-br","promiscMode":true,"vlan":0,"vlanTrunk":[{"minID":300,"maxID":320}],"ipam":{}}`
	ovn := `{"cniVersion":"0.3.1","name":"net1-ovn","type":"kube-ovn"}`
	tests := []struct {
		name        string
		item        []byte
		want        Segment
		typ         string
		cidr, gw    string
		wantSkipped bool
	}{
		{name: "access VLAN as the network controller labels it, with its learned route",
			item: nadJSON(t, "default", "vlan10", vlanLabels("mgmt", "10"), route, harvesterConfig("vlan10", "mgmt", 10)),
			want: seg("mgmt", 10), typ: TypeVLAN, cidr: "10.0.10.0/24", gw: "10.0.10.1"},
		{name: "untagged",
			item: nadJSON(t, "default", "untagged", map[string]string{labelClusterNetwork: "mgmt", labelType: TypeUntagged}, nil, harvesterConfig("untagged", "mgmt", 0)),
			want: seg("mgmt", 0), typ: TypeUntagged},
		{name: "trunk is its own domain",
			item: nadJSON(t, "default", "trunk", map[string]string{labelClusterNetwork: "test-cn", labelType: TypeTrunk}, nil, trunk),
			want: Segment{Cluster: testCluster, ClusterNetwork: "test-cn", Isolated: "default/trunk"}, typ: TypeTrunk},
		{name: "kube-ovn overlay is on mgmt but no part of its untagged L2",
			item: nadJSON(t, "default", "ovn", map[string]string{labelClusterNetwork: "mgmt", labelType: TypeOverlay}, nil, ovn),
			want: Segment{Cluster: testCluster, ClusterNetwork: "mgmt", Isolated: "default/ovn"}, typ: TypeOverlay},
		{name: "labels only, no config",
			item: nadJSON(t, "default", "vlan20", vlanLabels("data", "20"), nil, ""),
			want: seg("data", 20), typ: TypeVLAN},
		{name: "labels only, untagged by default",
			item: nadJSON(t, "default", "u", map[string]string{labelClusterNetwork: "data"}, nil, ""),
			want: seg("data", 0), typ: TypeUntagged},
		{name: "config without labels, as before the controller saw it",
			item: nadJSON(t, "default", "vlan30", nil, nil, harvesterConfig("vlan30", "data", 30)),
			want: seg("data", 30), typ: TypeVLAN},
		{name: "config wins over stale labels: the CNI plugin acts on it",
			item: nadJSON(t, "default", "vlan40", vlanLabels("data", "41"), nil, harvesterConfig("vlan40", "data", 40)),
			want: seg("data", 40), typ: TypeVLAN},
		{name: "an outdated route is no route",
			item: nadJSON(t, "default", "vlan10", vlanLabels("mgmt", "10"),
				map[string]string{annotationRoute: `{"mode":"auto","cidr":"10.0.10.0/24","gateway":"10.0.10.1","outdated":true}`}, harvesterConfig("vlan10", "mgmt", 10)),
			want: seg("mgmt", 10), typ: TypeVLAN},
		{name: "a route that is not JSON leaves the network",
			item: nadJSON(t, "default", "vlan10", vlanLabels("mgmt", "10"), map[string]string{annotationRoute: `{"mode":`}, harvesterConfig("vlan10", "mgmt", 10)),
			want: seg("mgmt", 10), typ: TypeVLAN},
		{name: "manual route with host bits and a gateway of the other family",
			item: nadJSON(t, "default", "vlan10", vlanLabels("mgmt", "10"), map[string]string{annotationRoute: `{"mode":"manual","cidr":"10.0.10.7/24","gateway":"fd00::1"}`}, harvesterConfig("vlan10", "mgmt", 10)),
			want: seg("mgmt", 10), typ: TypeVLAN, cidr: "10.0.10.0/24"},
		{name: "config that is not JSON", wantSkipped: true,
			item: nadJSON(t, "default", "x", vlanLabels("mgmt", "10"), nil, `{"type":"bridge",`)},
		{name: "no cluster network at all", wantSkipped: true,
			item: nadJSON(t, "default", "x", nil, nil, "")},
		{name: "a CNI type Harvester does not manage", wantSkipped: true,
			item: nadJSON(t, "default", "x", vlanLabels("mgmt", "10"), nil, `{"type":"macvlan","master":"eth1"}`)},
		{name: "a bridge not named <cluster network>-br", wantSkipped: true,
			item: nadJSON(t, "default", "x", nil, nil, `{"type":"bridge","bridge":"br0","vlan":10}`)},
		{name: "a bridge name longer than a device name", wantSkipped: true,
			item: nadJSON(t, "default", "x", nil, nil, `{"type":"bridge","bridge":"averylongname-br","vlan":10}`)},
		{name: "VLAN out of range", wantSkipped: true,
			item: nadJSON(t, "default", "x", nil, nil, harvesterConfig("x", "mgmt", 4095))},
		{name: "VLAN label that is no number", wantSkipped: true,
			item: nadJSON(t, "default", "x", vlanLabels("mgmt", "ten"), nil, "")},
		{name: "L2VlanNetwork label without a VLAN", wantSkipped: true,
			item: nadJSON(t, "default", "x", map[string]string{labelClusterNetwork: "mgmt", labelType: TypeVLAN}, nil, "")},
		{name: "a cluster network label that is no name", wantSkipped: true,
			item: nadJSON(t, "default", "x", map[string]string{labelClusterNetwork: "Mgmt Net"}, nil, "")},
		{name: "a name the API server would not allow", wantSkipped: true,
			item: nadJSON(t, "default", "X_Y", vlanLabels("mgmt", "10"), nil, harvesterConfig("x", "mgmt", 10))},
		{name: "vlan written as a string", wantSkipped: true,
			item: nadJSON(t, "default", "x", nil, nil, `{"type":"bridge","bridge":"mgmt-br","vlan":"10"}`)},
		{name: "not an object", wantSkipped: true, item: []byte(`[1,2]`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := parseNAD(testCluster, tt.item)
			if tt.wantSkipped {
				if err == nil {
					t.Fatalf("parsed %+v, want it skipped", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("skipped: %v", err)
			}
			if n.Segment != tt.want || n.Type != tt.typ {
				t.Errorf("segment %+v type %s, want %+v %s", n.Segment, n.Type, tt.want, tt.typ)
			}
			var cidr netip.Prefix
			var gw netip.Addr
			if tt.cidr != "" {
				cidr = netip.MustParsePrefix(tt.cidr)
			}
			if tt.gw != "" {
				gw = addr(tt.gw)
			}
			if n.CIDR != cidr || n.Gateway != gw {
				t.Errorf("route %v via %v, want %v via %v", n.CIDR, n.Gateway, cidr, gw)
			}
		})
	}
}

func TestSegmentString(t *testing.T) {
	for s, want := range map[Segment]string{
		seg("mgmt", 10): "cluster network mgmt, VLAN 10",
		seg("mgmt", 0):  "cluster network mgmt, untagged",
		{}:              "any segment",
		{Cluster: testCluster, ClusterNetwork: "mgmt", Isolated: "default/ovn"}: "network default/ovn on cluster network mgmt",
	} {
		if got := s.String(); got != want {
			t.Errorf("%+v is %q, want %q", s, got, want)
		}
	}
}
