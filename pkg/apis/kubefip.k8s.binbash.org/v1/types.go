package v1

import (
	"github.com/rancher/wrangler/v2/pkg/genericcondition"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Annotation keys of the original kube-fip-operator. They are part of the compatibility contract
// and never change.
const (
	// AnnotationHarvesterClusterName ties a FloatingIPRange to a Harvester cluster (its Rancher
	// display name).
	AnnotationHarvesterClusterName = "harvesterClusterName"
	// AnnotationHarvesterNetworkName ties a FloatingIPRange to a Harvester VM network.
	AnnotationHarvesterNetworkName = "harvesterNetworkName"
	// AnnotationClusterName names the Rancher guest cluster a FloatingIP belongs to.
	AnnotationClusterName = "clustername"
	// AnnotationFloatingIPRange names the FloatingIPRange a FloatingIP is allocated from.
	AnnotationFloatingIPRange = "fiprange"
	// AnnotationUpdateConfigMap, when "true", lets the operator overwrite an existing kube-vip
	// ConfigMap in the guest cluster.
	AnnotationUpdateConfigMap = "updateConfigMap"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FloatingIP is one address of a FloatingIPRange, held for one Rancher guest cluster. It lives in
// the guest cluster's namespace (c-m-xxxxxxxx); its annotations name the cluster (clustername), the
// range (fiprange) and whether the guest's existing kube-vip ConfigMap may be overwritten
// (updateConfigMap).
type FloatingIP struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the address asked for.
	Spec FloatingIPSpec `json:"spec,omitempty"`
	// Status is the address held, the guest cluster's state and the conditions, written by the
	// operator.
	Status FloatingIPStatus `json:"status,omitempty"`
}

// FloatingIPSpec is what a person or the discovery controller asks for.
type FloatingIPSpec struct {
	// IPAddress is the address to hold, IPv4 or IPv6, for example 10.135.10.201. Empty asks for any
	// free address of the range; the operator writes the address it allocated back here.
	IPAddress string `json:"ipaddress,omitempty"`
}

// FloatingIPStatus is what the operator observed and did.
type FloatingIPStatus struct {
	// IPAddress is the address this object holds in its range; empty while it holds none.
	IPAddress string `json:"ipaddress,omitempty"`
	// Range is the FloatingIPRange the address is held in.
	Range string `json:"range,omitempty"`
	// ClusterName is the Rancher guest cluster the address is for.
	ClusterName string `json:"clusterName,omitempty"`
	// GuestState is the guest cluster's state as last seen: Pending, Provisioning, Disconnected,
	// Configured or Error.
	GuestState string `json:"guestState,omitempty"`
	// GuestInputs is a hash of what the last guest pass worked from: the address, the cluster and
	// updateConfigMap, Rancher's view of the cluster (connection, labels) and the version of its
	// kubeconfig Secret. A change of any of them starts a new pass; anything else does not.
	GuestInputs string `json:"guestInputs,omitempty"`
	// ObservedGeneration is the spec generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready, Allocated, GuestConfigured and KubevipInstalled, each with a reason.
	Conditions []genericcondition.GenericCondition `json:"conditions,omitempty"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FloatingIPRange is a pool of addresses on one Harvester network, handed out as FloatingIPs. Its
// annotations harvesterClusterName and harvesterNetworkName tie it to a Harvester cluster and VM
// network.
type FloatingIPRange struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the pool.
	Spec FloatingIPRangeSpec `json:"spec,omitempty"`
	// Status is the record of the pool's allocations, its counts and conditions, written by the
	// operator.
	Status FloatingIPRangeStatus `json:"status,omitempty"`
}

// FloatingIPRangeSpec describes the pool.
type FloatingIPRangeSpec struct {
	// IPRange is the pool as an IPv4 or IPv6 CIDR, for example 10.135.10.192/26 or fd00:10::/64.
	// The IPv4 network and broadcast addresses and the IPv6 subnet-router anycast address are never
	// handed out.
	IPRange string `json:"iprange" wrangler:"required"`
	// Exclude lists addresses (10.0.0.5), CIDRs (10.0.0.8/30) or inclusive ranges
	// (10.0.0.20-10.0.0.29) inside the pool that are never handed out.
	Exclude []string `json:"exclude,omitempty"`
	// Region is unused: the operator neither reads nor writes it. It is kept for compatibility with
	// the original kube-fip-operator's CRD, so that ranges created for it keep the value.
	Region string `json:"region,omitempty"`
	// AllowedNamespaces lists namespaces, other than those of Rancher guest clusters, whose
	// FloatingIPs may take addresses from this range. A FloatingIP in a c-m-* namespace of a
	// Rancher management cluster may always; one anywhere else gets no address unless its range
	// lists its namespace here.
	AllowedNamespaces []string `json:"allowedNamespaces,omitempty"`
}

// FloatingIPRangeStatus is the record of the pool's allocations and its counts.
type FloatingIPRangeStatus struct {
	// Capacity is the number of addresses the pool can hand out, in decimal (an IPv6 pool can hold
	// more than 64 bits of addresses).
	Capacity string `json:"capacity,omitempty"`
	// Used is the number of addresses held.
	Used int64 `json:"used"`
	// Available is Capacity minus Used, in decimal.
	Available string `json:"available,omitempty"`
	// Allocations is the record of held addresses written by releases before FloatingIPAllocation
	// objects (address to FloatingIP). The operator adopts each entry as a FloatingIPAllocation and
	// then removes it, so it is empty once a range is migrated; the held addresses are listed by
	// kubectl get fipalloc -l kubefip.k8s.binbash.org/range=<name>.
	Allocations map[string]Allocation `json:"allocations,omitempty"`
	// ObservedGeneration is the spec generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready (with a reason when the range is invalid or overlaps another) and the
	// deletion and shrink guards.
	Conditions []genericcondition.GenericCondition `json:"conditions,omitempty"`
}

// Allocation names the FloatingIP holding an address.
type Allocation struct {
	// Namespace is the FloatingIP's namespace, the guest cluster's c-m-xxxxxxxx namespace.
	Namespace string `json:"namespace"`
	// Name is the FloatingIP's name.
	Name string `json:"name"`
	// UID is the FloatingIP's UID: a FloatingIP re-created under the same name is another holder.
	UID types.UID `json:"uid"`
}

// Labels and annotations the operator sets on the objects it writes. Labels are for people and the
// Rancher UI (kubectl get fipalloc -l kubefip.k8s.binbash.org/range=<name>); the operator decides
// from an allocation's name and spec only.
const (
	// LabelRange carries RangeLabelValue(spec.range) on a FloatingIPAllocation.
	LabelRange = "kubefip.k8s.binbash.org/range"
	// LabelIPFamily is IPv4 or IPv6 on a FloatingIPAllocation.
	LabelIPFamily = "kubefip.k8s.binbash.org/ip-family"
	// LabelOwnerNamespace is the namespace of the FloatingIP holding the address; a namespace name is
	// a DNS label, so it always fits a label value.
	LabelOwnerNamespace = "kubefip.k8s.binbash.org/owner-namespace"
	// AnnotationProposedAddress marks a FloatingIP's spec.ipaddress as the discovery controller's
	// proposal rather than a person's request: the operator may replace a proposal that was taken.
	AnnotationProposedAddress = "kubefip.k8s.binbash.org/proposed-address"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FloatingIPAllocation records that one address is held by one FloatingIP. Its name is the address
// (10.135.10.201; an IPv6 address fully expanded with - for :, fd00-0010-0000-0000-0000-0000-0000-0005):
// creating it is the claim, so the API server lets exactly one object, and so one FloatingIP, hold
// an address; deleting it is the release. Its spec never changes.
type FloatingIPAllocation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the address, the range it was handed out from and its holder. It is immutable: an
	// address changes hands by deleting this object and creating another.
	Spec FloatingIPAllocationSpec `json:"spec" wrangler:"required"`
}

// FloatingIPAllocationSpec is what an allocation records.
type FloatingIPAllocationSpec struct {
	// Address is the held address in canonical form, for example 10.135.10.201 or fd00:10::5. It is
	// the address the object's name encodes.
	Address string `json:"address" wrangler:"required"`
	// Range is the FloatingIPRange the address was handed out from.
	Range string `json:"range" wrangler:"required"`
	// Owner is the FloatingIP holding the address.
	Owner FloatingIPReference `json:"owner" wrangler:"required"`
}

// FloatingIPReference names one FloatingIP object; one re-created under the same name is another
// object, with another UID, and does not hold what the first held.
type FloatingIPReference struct {
	// Namespace is the FloatingIP's namespace, the guest cluster's c-m-xxxxxxxx namespace.
	Namespace string `json:"namespace" wrangler:"required"`
	// Name is the FloatingIP's name.
	Name string `json:"name" wrangler:"required"`
	// UID is the FloatingIP's UID.
	UID types.UID `json:"uid" wrangler:"required"`
}
