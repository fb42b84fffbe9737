package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubefipv1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
)

// The demo: a Harvester cluster "harvester-demo" as Rancher knows it, a range for its network
// vlan10, and a guest cluster "demo" provisioned on it whose namespace Rancher has not created yet.
const (
	demoCluster     = "demo"
	demoNamespace   = "c-m-demo0001"
	demoHarvesterID = "c-m-harvdemo"
	demoDelay       = 5 * time.Second
)

// demoGuest is the demo guest cluster, connected through Rancher's cluster proxy with kubeconfig.
func demoGuest(kubeconfig []byte) rancher.Guest {
	return rancher.Guest{Name: demoCluster, ID: demoNamespace, Harvester: demoHarvesterID, Display: "harvester-demo",
		Network: map[string]interface{}{
			"diskSize": "40", "imageName": "default/ubuntu",
			"networkInfo": `{"interfaces":[{"networkName":"default/vlan10","macAddress":""}]}`,
		},
		Kubeconfig: kubeconfig}
}

// seedRancher creates what Rancher would hold for the demo guest cluster on Harvester, and the
// range for its network: everything but the guest cluster's namespace, which newGuestNamespace
// creates later.
func seedRancher(world *rancher.World, kubeconfig []byte) error {
	if err := world.AddGuest(demoGuest(kubeconfig), "namespace"); err != nil {
		return err
	}
	_, err := world.FIPs.FloatingIPRange().Create(&kubefipv1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-vlan10", Annotations: map[string]string{
			kubefipv1.AnnotationHarvesterClusterName: "harvester-demo",
			kubefipv1.AnnotationHarvesterNetworkName: "vlan10",
		}},
		Spec: kubefipv1.FloatingIPRangeSpec{IPRange: "192.0.2.0/28"},
	})
	if err != nil {
		return fmt.Errorf("creating the demo range: %w", err)
	}
	return nil
}

// newGuestNamespace creates the guest cluster's namespace after demoDelay, as Rancher does a
// moment after the cluster: the operator has been waiting for it, and allocates at once.
func newGuestNamespace(ctx context.Context, world *rancher.World) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(demoDelay):
	}
	if err := world.AddNamespace(demoNamespace); err != nil {
		logrus.Warnf("demo: %v", err)
		return
	}
	logrus.Infof("demo: Rancher created namespace %s for guest cluster fleet-default/%s", demoNamespace, demoCluster)
}
