package segments

import (
	"net/netip"
	"os"
	"slices"
	"testing"
)

// guestNodeVMI is a guest cluster's node as docker-machine-driver-harvester builds it: a NIC on a
// VLAN network named without a namespace, another on the pod network, and a guest agent that
// reports the floating IP kube-vip added, a link-local address, and interfaces of its own.
const guestNodeVMI = `{
  "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
  "metadata": {"name": "guest1-pool1-abcde", "namespace": "default", "labels": {"harvesterhci.io/vmName": "guest1-pool1-abcde",
    "guestcluster.harvesterhci.io/name": "guest1", "nodepool.harvesterhci.io/name": "pool1-6d8f9c7b5", "harvesterhci.io/machineSetName": "default-guest1-pool1"}},
  "spec": {
    "domain": {"devices": {"interfaces": [{"bridge": {}, "model": "virtio", "name": "nic-0"}, {"masquerade": {}, "name": "pod"}]}},
    "networks": [{"multus": {"networkName": "vlan10"}, "name": "nic-0"}, {"pod": {}, "name": "pod"}]
  },
  "status": {
    "interfaces": [
      {"infoSource": "domain, guest-agent", "interfaceName": "enp1s0", "ipAddress": "10.0.10.5",
       "ipAddresses": ["10.0.10.5", "10.0.10.200", "fd00:10::5", "fe80::5054:ff:fe12:3456", "10.0.10.5"],
       "mac": "52:54:00:12:34:56", "name": "nic-0", "queueCount": 1, "linkState": "up"},
      {"infoSource": "domain, guest-agent", "interfaceName": "eth1", "ipAddress": "10.0.2.2", "name": "pod"},
      {"infoSource": "guest-agent", "interfaceName": "cni0", "ipAddress": "10.42.0.1", "ipAddresses": ["10.42.0.1"]}
    ]
  }
}`

// TestParseVMI reads, first of all, testdata/vmi-harvester-v1.8.2-nodedrain.json: the VMI of
// harvester v1.8.2's pkg/controller/master/nodedrain/nodedrain_controller_test.go (vmiListString),
// unchanged.
func TestParseVMI(t *testing.T) {
	upstream, err := os.ReadFile("testdata/vmi-harvester-v1.8.2-nodedrain.json")
	if err != nil {
		t.Fatal(err)
	}
	workload := func(ref string) (Segment, bool) {
		if ref == "default/workload" {
			return seg("mgmt", 0), true
		}
		return segments(ref)
	}
	tests := []struct {
		name    string
		item    string
		guest   string
		want    []Interface
		claims  []string
		segment Segment
		object  string
		partial bool
		skipped bool
	}{
		{name: "harvester's own testdata: link-local left out", item: string(upstream), segment: seg("mgmt", 0),
			want:   []Interface{{VM: "default/pinned-to-host", Network: "default/workload", InterfaceName: "eth0", Addresses: []netip.Addr{addr("172.19.106.159")}}},
			claims: []string{"172.19.106.159"}, object: "VirtualMachineInstance default/pinned-to-host"},
		{name: "guest node: pod network and guest-only interfaces left out, duplicates once",
			item: guestNodeVMI, guest: "guest1", segment: seg("mgmt", 10),
			want: []Interface{{VM: "default/guest1-pool1-abcde", Guest: "guest1", Network: "default/vlan10", InterfaceName: "enp1s0",
				Addresses: []netip.Addr{addr("10.0.10.5"), addr("10.0.10.200"), addr("fd00:10::5")}}},
			claims: []string{"10.0.10.5", "10.0.10.200", "fd00:10::5"}},
		{name: "ipAddress alone, network not read",
			item: `{"metadata":{"name":"a","namespace":"prod"},"spec":{"networks":[{"name":"n","multus":{"networkName":"other/net"}}]},
				"status":{"interfaces":[{"name":"n","ipAddress":"192.0.2.7"}]}}`,
			want:   []Interface{{VM: "prod/a", Network: "other/net", Addresses: []netip.Addr{addr("192.0.2.7")}}},
			claims: []string{"192.0.2.7"}, object: "VirtualMachineInstance prod/a (network other/net not found)"},
		{name: "a bad address is left out, the rest kept", partial: true, segment: seg("data", 0),
			item: `{"metadata":{"name":"a","namespace":"prod"},"spec":{"networks":[{"name":"n","multus":{"networkName":"untagged"}}]},
				"status":{"interfaces":[{"name":"n","ipAddresses":["not-an-ip","192.0.2.8/24","::ffff:192.0.2.9","0.0.0.0"]}]}}`,
			want:   []Interface{{VM: "prod/a", Network: "prod/untagged", Addresses: []netip.Addr{addr("192.0.2.8"), addr("192.0.2.9")}}},
			claims: []string{"192.0.2.8", "192.0.2.9"}},
		{name: "a network reference that is no name", partial: true,
			item: `{"metadata":{"name":"a","namespace":"prod"},"spec":{"networks":[{"name":"n","multus":{"networkName":"a/b/c"}}]},
				"status":{"interfaces":[{"name":"n","ipAddress":"192.0.2.7"}]}}`},
		{name: "an interface name no guest would choose is dropped",
			item: `{"metadata":{"name":"a","namespace":"prod"},"spec":{"networks":[{"name":"n","multus":{"networkName":"untagged"}}]},
				"status":{"interfaces":[{"name":"n","interfaceName":"eth0\u001b[31m"}]}}`,
			want: []Interface{{VM: "prod/a", Network: "prod/untagged"}}},
		{name: "not running: no status", item: `{"metadata":{"name":"a","namespace":"prod"},"spec":{"networks":[{"name":"n","multus":{"networkName":"x"}}]}}`},
		{name: "a guest label that is no label value", skipped: true,
			item: `{"metadata":{"name":"a","namespace":"b","labels":{"guestcluster.harvesterhci.io/name":"not a label value"}}}`},
		{name: "interfaces of the wrong type", skipped: true, item: `{"metadata":{"name":"a","namespace":"prod"},"status":{"interfaces":"eth0"}}`},
		{name: "no namespace", skipped: true, item: `{"metadata":{"name":"a"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ifaces, claims, partial, err := parseVMI([]byte(tt.item), workload)
			if tt.skipped {
				if err == nil {
					t.Fatalf("parsed %+v, want it skipped", ifaces)
				}
				return
			}
			if err != nil {
				t.Fatalf("skipped: %v", err)
			}
			if partial != tt.partial {
				t.Errorf("partial %v, want %v", partial, tt.partial)
			}
			if !slices.EqualFunc(ifaces, tt.want, func(a, b Interface) bool {
				return a.VM == b.VM && a.Guest == b.Guest && a.Network == b.Network && a.InterfaceName == b.InterfaceName && slices.Equal(a.Addresses, b.Addresses)
			}) {
				t.Errorf("interfaces %+v, want %+v", ifaces, tt.want)
			}
			var runs []string
			for _, c := range claims {
				runs = append(runs, run(c))
				if c.Kind != KindVM || c.Segment != tt.segment || (tt.object != "" && c.Object != tt.object) || c.Guest != tt.guest {
					t.Errorf("claim %+v, want a VM's on %+v named %q", c, tt.segment, tt.object)
				}
			}
			if !slices.Equal(runs, tt.claims) {
				t.Errorf("claims %v, want %v", runs, tt.claims)
			}
		})
	}
}
