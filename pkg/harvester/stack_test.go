package harvester

import (
	"net/netip"
	"strings"
	"testing"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	rkev1 "github.com/rancher/rancher/pkg/apis/rke.cattle.io/v1"
)

func TestParseStack(t *testing.T) {
	t.Parallel()
	const v4v6, v6v4 = "10.42.0.0/16,fd00:42::/56", "fd00:43::/112,10.43.0.0/16"
	long := strings.Repeat("10.42.0.0/16,", 100) + "fd00:42::/56"
	tests := []struct {
		name   string
		config map[string]interface{}
		dual   bool
		note   string // a part of the note; "" for none
	}{
		{name: "no keys", config: nil},
		{name: "other keys only", config: map[string]interface{}{"cni": "calico", "disable": []interface{}{"rke2-ingress-nginx"}}},
		{name: "single-stack IPv4", config: map[string]interface{}{ClusterCIDRKey: "10.42.0.0/16", ServiceCIDRKey: "10.43.0.0/16"}},
		{name: "single-stack IPv6", config: map[string]interface{}{ClusterCIDRKey: "fd00:42::/56", ServiceCIDRKey: "fd00:43::/112"}},
		{name: "dual-stack, IPv4 first", config: map[string]interface{}{ClusterCIDRKey: v4v6, ServiceCIDRKey: "10.43.0.0/16,fd00:43::/112"}, dual: true},
		{name: "dual-stack, IPv6 first", config: map[string]interface{}{ClusterCIDRKey: "fd00:42::/56,10.42.0.0/16", ServiceCIDRKey: v6v4}, dual: true},
		{name: "dual-stack, the keys in different orders", config: map[string]interface{}{ClusterCIDRKey: v4v6, ServiceCIDRKey: v6v4}, dual: true},
		{name: "whitespace and empty entries", config: map[string]interface{}{
			ClusterCIDRKey: " 10.42.0.0/16 ,\tfd00:42::/56\n", ServiceCIDRKey: ",, 10.43.0.0/16,,fd00:43::/112 ,"}, dual: true},
		{name: "lists, as YAML may write them", config: map[string]interface{}{
			ClusterCIDRKey: []interface{}{"10.42.0.0/16", "fd00:42::/56"}, ServiceCIDRKey: []string{"  ", "fd00:43::/112 ,10.43.0.0/16"}}, dual: true},
		{name: "host bits set, as RKE2 accepts", config: map[string]interface{}{ClusterCIDRKey: "10.42.0.1/16,fd00:42::1/56", ServiceCIDRKey: v6v4}, dual: true},
		{name: "only cluster-cidr dual", config: map[string]interface{}{ClusterCIDRKey: v4v6, ServiceCIDRKey: "10.43.0.0/16"},
			note: "cluster-cidr lists IPv4 and IPv6 but service-cidr lists only IPv4"},
		{name: "only service-cidr dual", config: map[string]interface{}{ClusterCIDRKey: "fd00:42::/56", ServiceCIDRKey: v6v4},
			note: "service-cidr lists IPv4 and IPv6 but cluster-cidr lists only IPv6"},
		{name: "only cluster-cidr given, dual", config: map[string]interface{}{ClusterCIDRKey: v4v6},
			note: "but service-cidr lists nothing"},
		{name: "a number", config: map[string]interface{}{ClusterCIDRKey: v4v6, ServiceCIDRKey: 42.0}, note: "service-cidr is a float64, not a string"},
		{name: "an object", config: map[string]interface{}{ClusterCIDRKey: map[string]interface{}{"v4": "10.42.0.0/16"}, ServiceCIDRKey: v4v6},
			note: "cluster-cidr is a map[string]interface {}"},
		{name: "a bool", config: map[string]interface{}{ClusterCIDRKey: true, ServiceCIDRKey: true}, note: "cluster-cidr is a bool"},
		{name: "a list with a number", config: map[string]interface{}{ClusterCIDRKey: []interface{}{"10.42.0.0/16", 6}, ServiceCIDRKey: v4v6},
			note: "cluster-cidr item 2 is a int"},
		{name: "not a CIDR", config: map[string]interface{}{ClusterCIDRKey: "10.42.0.0/16,fd00:42::", ServiceCIDRKey: v4v6},
			note: `cluster-cidr lists "fd00:42::", which is not a CIDR`},
		{name: "garbage", config: map[string]interface{}{ClusterCIDRKey: "\x00\xff;rm -rf /", ServiceCIDRKey: v4v6}, note: "not a CIDR"},
		{name: "an IPv4-mapped IPv6 CIDR is no CIDR of a family", config: map[string]interface{}{ClusterCIDRKey: "10.42.0.0/16,::ffff:10.0.0.0/104", ServiceCIDRKey: v4v6},
			note: "not a CIDR"},
		{name: "very long", config: map[string]interface{}{ClusterCIDRKey: long, ServiceCIDRKey: v4v6}, note: "cluster-cidr is longer than 1024 characters"},
		{name: "very long, in a list", config: map[string]interface{}{ClusterCIDRKey: v4v6, ServiceCIDRKey: []interface{}{long[:600], long[600:]}},
			note: "service-cidr is longer than 1024 characters"},
		{name: "too many CIDRs", config: map[string]interface{}{ClusterCIDRKey: v4v6, ServiceCIDRKey: strings.Repeat("10.43.0.0/16,", 16) + "fd00:43::/112"},
			note: "service-cidr lists more than 16 CIDRs"},
		{name: "too long a list", config: map[string]interface{}{ClusterCIDRKey: make([]interface{}, 17), ServiceCIDRKey: v4v6},
			note: "cluster-cidr lists more than 16 CIDRs"},
		{name: "a huge entry is quoted short", config: map[string]interface{}{ClusterCIDRKey: strings.Repeat("x", 1000), ServiceCIDRKey: v4v6},
			note: `cluster-cidr lists "xxxxxxxxxx`},
		{name: "empty strings", config: map[string]interface{}{ClusterCIDRKey: "", ServiceCIDRKey: ""}},
		{name: "null", config: map[string]interface{}{ClusterCIDRKey: nil, ServiceCIDRKey: nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseStack(tt.config)
			if got.DualStack != tt.dual {
				t.Errorf("DualStack = %v, want %v (note %q)", got.DualStack, tt.dual, got.Note)
			}
			switch {
			case tt.note == "" && got.Note != "":
				t.Errorf("note %q, want none", got.Note)
			case tt.note != "" && (!strings.HasPrefix(got.Note, "single-stack: ") || !strings.Contains(got.Note, tt.note)):
				t.Errorf("note %q, want one with %q", got.Note, tt.note)
			}
			if len(got.Note) > 400 {
				t.Errorf("a %d-character note", len(got.Note))
			}
		})
	}
}

func TestStackOf(t *testing.T) {
	t.Parallel()
	if s := StackOf(cluster("")); s != (Stack{}) {
		t.Errorf("a cluster without rkeConfig: %+v", s)
	}
	c := cluster("cc", pool("cp", true, MachineConfigKind, "nc", ""))
	if s := StackOf(c); s != (Stack{}) {
		t.Errorf("a cluster without machineGlobalConfig: %+v", s)
	}
	c.Spec.RKEConfig.MachineGlobalConfig = rkev1.GenericMap{Data: map[string]interface{}{
		ClusterCIDRKey: "10.42.0.0/16,fd00:42::/56", ServiceCIDRKey: "10.43.0.0/16,fd00:43::/112"}}
	if s := StackOf(c); !s.DualStack {
		t.Errorf("a dual-stack cluster: %+v", s)
	}
	// As the API server hands it over: the JSON of machineGlobalConfig decoded into the GenericMap.
	var decoded provv1.RKEConfig
	if err := decoded.MachineGlobalConfig.UnmarshalJSON([]byte(`{"cluster-cidr":["10.42.0.0/16","fd00:42::/56"],"service-cidr":"fd00:43::/112,10.43.0.0/16"}`)); err != nil {
		t.Fatal(err)
	}
	c.Spec.RKEConfig = &decoded
	if s := StackOf(c); !s.DualStack {
		t.Errorf("a dual-stack cluster from JSON: %+v", s)
	}
	if s := StackOf(nil); s != (Stack{}) {
		t.Errorf("no cluster: %+v", s)
	}
}

func TestFamilies(t *testing.T) {
	t.Parallel()
	for cidr, want := range map[string]Family{
		"10.0.0.0/24": IPv4, "fd00::/64": IPv6, "10.0.0.1/24": IPv4, "::ffff:10.0.0.0/104": 0,
		"": 0, "10.0.0.0": 0, " 10.0.0.0/24": 0, "garbage": 0,
	} {
		if got := FamilyOfCIDR(cidr); got != want {
			t.Errorf("FamilyOfCIDR(%q) = %v, want %v", cidr, got, want)
		}
	}
	if FamilyOfAddr(netip.MustParseAddr("10.0.0.1")) != IPv4 || FamilyOfAddr(netip.MustParseAddr("fd00::1")) != IPv6 || FamilyOfAddr(netip.Addr{}) != 0 {
		t.Error("FamilyOfAddr")
	}
	if IPv4.Other() != IPv6 || IPv6.Other() != IPv4 || Family(0).Other() != 0 {
		t.Error("Other")
	}
	if IPv4.String() != "IPv4" || IPv6.String() != "IPv6" || Family(5).String() != "unknown family" {
		t.Error("String")
	}
}
