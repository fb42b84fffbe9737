package guestcluster

import (
	"testing"

	"github.com/kubefip/kube-fip-operator/pkg/config"
)

// TestWithInterface: the NIC read from the guest's VMs reaches kube-vip's values unless
// kube-fip-config names an interface of its own, or the name is none a Linux interface may have;
// the configuration it came from is left as it was.
func TestWithInterface(t *testing.T) {
	own := config.Default()
	own.Kubevip.Values = map[string]interface{}{"env": map[string]interface{}{"vip_interface": "bond0"}}
	for _, tt := range []struct {
		name string
		cfg  config.Config
		nic  string
		want string
	}{
		{"the default values take the NIC", config.Default(), "eth1", "eth1"},
		{"no NIC known", config.Default(), "", "enp1s0"},
		{"a name no Linux interface has", config.Default(), "Ethernet 2", "enp1s0"},
		{"kube-fip-config names its own", own, "eth1", "bond0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.cfg.Kubevip.Values["env"].(map[string]interface{})["vip_interface"]
			got := withInterface(tt.cfg, tt.nic).Kubevip.Values["env"].(map[string]interface{})["vip_interface"]
			if got != tt.want {
				t.Errorf("vip_interface %v, want %s", got, tt.want)
			}
			if after := tt.cfg.Kubevip.Values["env"].(map[string]interface{})["vip_interface"]; after != before {
				t.Errorf("the configuration's own values changed from %v to %v", before, after)
			}
		})
	}
}
