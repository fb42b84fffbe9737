package guestcluster

import (
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/pkg/harvesterview"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
)

// nicOf is the NIC the guest of f has on the network of f's range, as the guest's control-plane
// VMs in Harvester show it, with the problem of nodes that lack it or name it differently. Nothing
// when the Harvester cluster is not read, or the range names no network it has; a problem of
// reason WaitingForHarvester while its first read has not ended.
func (c *controller) nicOf(f *v1.FloatingIP) (harvesterview.NIC, *problem.Problem) {
	if c.Harvesters == nil || f.Status.Range == "" {
		return harvesterview.NIC{}, nil
	}
	r, err := c.Ranges.Get(f.Status.Range)
	if err != nil {
		return harvesterview.NIC{}, nil
	}
	display := strings.TrimSpace(r.Annotations[v1.AnnotationHarvesterClusterName])
	if display == "" || strings.TrimSpace(r.Annotations[v1.AnnotationHarvesterNetworkName]) == "" {
		return harvesterview.NIC{}, nil
	}
	e, ok := c.Harvesters.Get(display)
	if !ok {
		return harvesterview.NIC{}, problem.New(v1.ReasonWaitingForHarvester,
			"Harvester cluster %s is being read, for the NIC the guest's nodes have on the range's network; kube-vip is installed once it is known", display)
	}
	if e.View == nil {
		return harvesterview.NIC{}, nil
	}
	n, found, _ := e.View.NetworkNamed(strings.TrimSpace(r.Annotations[v1.AnnotationHarvesterNetworkName]))
	if !found {
		return harvesterview.NIC{}, nil
	}
	cluster := f.Annotations[v1.AnnotationClusterName]
	prefix := cluster + "-"
	if prov, err := c.Provisioning.Cache().Get(c.opts.FleetNamespace, cluster); err == nil {
		if cp, ok, _ := harvester.ControlPlaneOf(prov); ok {
			prefix += cp.Pool + "-"
		}
	}
	return harvesterview.NICOf(e.View, cluster, prefix, n.String())
}

// harvesterPending says whether the first read of the Harvester cluster f's range names has not
// ended, so that the NIC f's guest announces on is not known yet.
func (c *controller) harvesterPending(f *v1.FloatingIP) bool {
	_, p := c.nicOf(f)
	return p != nil && p.Reason == v1.ReasonWaitingForHarvester
}

// vipInterface is the interface name kube-fip-config's kube-vip values give, "" when they leave it
// at the product's default: a name set there is the deployment's override of every guest's NIC.
func vipInterface(values map[string]interface{}) string {
	for _, path := range [][2]string{{"env", "vip_interface"}, {"config", "vip_interface"}} {
		if m, ok := values[path[0]].(map[string]interface{}); ok {
			if name, ok := m[path[1]].(string); ok && name != "" && name != defaultInterface() {
				return name
			}
		}
	}
	return ""
}

// defaultInterface is the interface the product's default kube-vip values name.
func defaultInterface() string {
	env, _ := config.Default().Kubevip.Values["env"].(map[string]interface{})
	name, _ := env["vip_interface"].(string)
	return name
}

// withInterface is cfg with kube-vip told to announce on the NIC name, unless kube-fip-config
// names one itself, or name is empty or no Linux interface name (the guest's agent reported it:
// a name the values' judge would refuse is not passed on, and the values' own is used). cfg's
// values are shared: the maps changed are copies.
func withInterface(cfg config.Config, name string) config.Config {
	if !chartvalues.IsInterfaceName(name) || vipInterface(cfg.Kubevip.Values) != "" {
		return cfg
	}
	values := maps.Clone(cfg.Kubevip.Values)
	env, _ := values["env"].(map[string]interface{})
	env = maps.Clone(env)
	if env == nil {
		env = map[string]interface{}{}
	}
	env["vip_interface"] = name
	values["env"] = env
	cfg.Kubevip.Values = values
	return cfg
}

// harvesterChanged starts a pass for each guest whose NIC a new view of the Harvester cluster
// display may change: those of the FloatingIPs of its ranges whose inputs changed.
func (c *controller) harvesterChanged(display string) {
	fips, err := c.FloatingIPs.Cache().List("", labels.Everything())
	if err != nil {
		return
	}
	for _, f := range fips {
		r, err := c.Ranges.Get(f.Status.Range)
		if err == nil && f.DeletionTimestamp == nil && f.Annotations[v1.AnnotationClusterName] != "" &&
			strings.TrimSpace(r.Annotations[v1.AnnotationHarvesterClusterName]) == display {
			c.enqueueIfNew(f)
		}
	}
}
