package fakes

import (
	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// The kinds the controllers read and write.
type (
	FloatingIPs          = Controller[*v1.FloatingIP, *v1.FloatingIPList]
	Ranges               = ClusterController[*v1.FloatingIPRange, *v1.FloatingIPRangeList]
	Allocations          = ClusterController[*v1.FloatingIPAllocation, *v1.FloatingIPAllocationList]
	ProvisioningClusters = Controller[*provv1.Cluster, *provv1.ClusterList]
	ManagementClusters   = ClusterController[*mgmtv3.Cluster, *mgmtv3.ClusterList]
)

// NewFloatingIPs returns the FloatingIP controller holding fips.
func NewFloatingIPs(fips ...*v1.FloatingIP) *FloatingIPs {
	return NewController[*v1.FloatingIP, *v1.FloatingIPList](v1.Resource("floatingips"), fips...)
}

// NewRanges returns the FloatingIPRange controller holding ranges.
func NewRanges(ranges ...*v1.FloatingIPRange) *Ranges {
	return NewClusterController[*v1.FloatingIPRange, *v1.FloatingIPRangeList](v1.Resource("floatingipranges"), ranges...)
}

// NewAllocations returns the FloatingIPAllocation controller holding allocs.
func NewAllocations(allocs ...*v1.FloatingIPAllocation) *Allocations {
	return NewClusterController[*v1.FloatingIPAllocation, *v1.FloatingIPAllocationList](v1.Resource("floatingipallocations"), allocs...)
}

// NewProvisioningClusters returns Rancher's provisioning cluster controller holding clusters.
func NewProvisioningClusters(clusters ...*provv1.Cluster) *ProvisioningClusters {
	return NewController[*provv1.Cluster, *provv1.ClusterList](provv1.Resource("clusters"), clusters...)
}

// NewManagementClusters returns Rancher's management cluster controller holding clusters.
func NewManagementClusters(clusters ...*mgmtv3.Cluster) *ManagementClusters {
	return NewClusterController[*mgmtv3.Cluster, *mgmtv3.ClusterList](mgmtv3.Resource("clusters"), clusters...)
}
