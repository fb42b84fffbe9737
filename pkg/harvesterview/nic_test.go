package harvesterview

import (
	"strings"
	"testing"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/segments"
)

// node is an interface of a VM of guest "demo" (its name tells the pool) on network.
func node(vm, guest, network, name string) segments.Interface {
	return segments.Interface{VM: "default/" + vm, Guest: guest, Network: network, InterfaceName: name}
}

func TestNICOf(t *testing.T) {
	const net, other = "default/vlan20", "default/mgmt"
	tests := []struct {
		name   string
		nics   []segments.Interface
		want   string
		reason string
		named  []string
	}{
		{name: "every control-plane node names its NIC on the network alike",
			nics: []segments.Interface{node("demo-cp-a-1", "demo", other, "enp1s0"), node("demo-cp-a-1", "demo", net, "enp2s0"),
				node("demo-cp-a-2", "demo", other, "enp1s0"), node("demo-cp-a-2", "demo", net, "enp2s0"),
				node("demo-worker-b-1", "demo", other, "eth0"), node("other-cp-a-1", "other", net, "eth9")},
			want: "enp2s0"},
		{name: "a node without the guest agent counts for none",
			nics: []segments.Interface{node("demo-cp-a-1", "demo", net, "eth1"), node("demo-cp-a-2", "demo", net, "")},
			want: "eth1"},
		{name: "no agent anywhere: nothing known, nothing wrong",
			nics: []segments.Interface{node("demo-cp-a-1", "demo", net, "")}},
		{name: "a node with no NIC on the network is named",
			nics:   []segments.Interface{node("demo-cp-a-1", "demo", net, "eth1"), node("demo-cp-a-2", "demo", other, "eth0")},
			reason: v1.ReasonNoInterfaceOnNetwork, named: []string{"default/demo-cp-a-2"}},
		{name: "two names for one network are named with their nodes",
			nics:   []segments.Interface{node("demo-cp-a-1", "demo", net, "eth1"), node("demo-cp-a-2", "demo", net, "enp2s0")},
			reason: v1.ReasonInterfaceNamesDiffer, named: []string{`"eth1" on default/demo-cp-a-1`, `"enp2s0" on default/demo-cp-a-2`}},
		{name: "a guest Harvester shows no VM of",
			nics: []segments.Interface{node("other-cp-a-1", "other", net, "eth1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nic, p := NICOf(&segments.View{Interfaces: tt.nics}, "demo", "demo-cp-", net)
			if nic.Name != tt.want {
				t.Errorf("NIC %q, want %q", nic.Name, tt.want)
			}
			switch {
			case tt.reason == "" && p != nil:
				t.Errorf("problem %v, want none", p)
			case tt.reason != "" && (p == nil || p.Reason != tt.reason):
				t.Errorf("problem %v, want %s", p, tt.reason)
			}
			for _, n := range tt.named {
				if p == nil || !strings.Contains(p.Message, n) {
					t.Errorf("message %v does not name %s", p, n)
				}
			}
		})
	}
}
