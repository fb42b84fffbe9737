package leastprivilege

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/harvester"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// harvesterRead imports the run's Harvester cluster into Rancher, a real API server with
// Harvester's CRDs behind the cluster proxy, with a load balancer pool on the run's range, and
// waits until the range names the pool (the controllers read it, with the Secret and settings the
// chart lets them read) and the webhook refuses a range overlapping another pool of the network
// (it lists the provisioning cluster by name, as the chart lets it).
func (e *lpEnv) harvesterRead(w *lpWorld, stop func() error) error {
	ctx := context.Background()
	g := e.s.StartGuest(e.t, "lph"+e.tag)
	if err := harvester.Install(ctx, g.Config); err != nil {
		return err
	}
	c, err := harvester.NewCluster(g.Config)
	if err != nil {
		return err
	}
	if err := harvester.Register(e.r, e.proxy, g.Name, g.Config, w.a.Harvester, w.a.Display, "token-lph"+e.tag); err != nil {
		return err
	}
	if _, err := c.NAD(ctx, "default", "vlan10", "mgmt", 10, "", ""); err != nil {
		return err
	}
	for name, first := range map[string]string{"lp-pool": fmt.Sprintf("10.%d.0.14", e.octet), "lp-pool2": fmt.Sprintf("10.%d.64.5", e.octet)} {
		_, err := c.CreateLBPool(ctx, harvester.LBPool{Name: name, Network: "default/vlan10",
			Ranges: []harvester.Range{{Subnet: first + "/32"}}})
		if err != nil {
			return err
		}
	}
	err = rig.Until(scenarioTimeout, "the range naming the Harvester pool on it", stop, func() (bool, error) {
		r, err := e.r.FIPs.FloatingIPRange().Get(w.rangeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c, ok := v1.GetCondition(r.Status.Conditions, v1.Warning)
		return ok && strings.Contains(c.Message, "IPPool lp-pool "), nil
	})
	if err != nil {
		return err
	}
	probe := &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: w.rangeName + "-pool", Annotations: map[string]string{
		v1.AnnotationHarvesterClusterName: w.a.Display, v1.AnnotationHarvesterNetworkName: "vlan10"}},
		Spec: v1.FloatingIPRangeSpec{IPRange: fmt.Sprintf("10.%d.64.0/28", e.octet)}}
	return rig.Until(scenarioTimeout, "a range on the other pool refused by the webhook", stop, func() (bool, error) {
		return suite.RefusedBecause(e.s.DryRunCreateRange(probe), "IPPool lp-pool2"), nil
	})
}
