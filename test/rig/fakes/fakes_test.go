package fakes

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	mgmtcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io/v3"
	provcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io/v1"
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

// TestListSelectsByName: a client List by metadata.name finds the one object, in the generated
// list type.
func TestListSelectsByName(t *testing.T) {
	ranges := NewRanges(&v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "b"}})
	list, err := ranges.List(metav1.ListOptions{FieldSelector: "metadata.name=b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "b" {
		t.Errorf("items %v; want b alone", list.Items)
	}
}
