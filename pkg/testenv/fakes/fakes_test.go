package fakes

import (
	"testing"

	mgmtcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io/v3"
	provcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io/v1"

	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
)

// TestTheFakesAreTheGeneratedControllers: each fake serves where the generated controller does.
func TestTheFakesAreTheGeneratedControllers(t *testing.T) {
	var (
		_ kubefipcontrollers.FloatingIPController           = NewFloatingIPs()
		_ kubefipcontrollers.FloatingIPRangeController      = NewRanges()
		_ kubefipcontrollers.FloatingIPAllocationController = NewAllocations()
		_ provcontrollers.ClusterController                 = NewProvisioningClusters()
		_ mgmtcontrollers.ClusterController                 = NewManagementClusters()
	)
}
