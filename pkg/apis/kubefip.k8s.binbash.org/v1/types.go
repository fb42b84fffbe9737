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
	// AnnotationUpdateConfigMap, when "true", lets the operator overwrite another address in the
	// cidr-global key of an existing kube-vip ConfigMap in the guest cluster. A cidr-<namespace> or
	// range-<namespace> key a person wrote is never overwritten.
	AnnotationUpdateConfigMap = "updateConfigMap"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FloatingIP is one address of a FloatingIPRange, held for one Rancher guest cluster. It lives in
// the guest cluster's namespace (c-m-xxxxxxxx); its annotations name the cluster (clustername), the
// range (fiprange) and whether another address in cidr-global of the guest's existing kube-vip
// ConfigMap may be overwritten (updateConfigMap).
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
	GuestState GuestState `json:"guestState,omitempty"`
	// GuestAddresses are every address the guest cluster's kube-vip-cloud-provider ConfigMap got
	// from the FloatingIPs naming the cluster, this one's and the others', in the last pass that
	// wrote it: "10.0.0.5,fd00::5" for the global pool, a namespace's after it in parentheses
	// ("10.0.0.6 (ingress-nginx)").
	GuestAddresses string `json:"guestAddresses,omitempty"`
	// GuestInputs is a hash of what the last guest pass worked from: the address, the cluster and
	// updateConfigMap, Rancher's view of the cluster (connection, labels) and the version of its
	// kubeconfig Secret. A change of any of them starts a new pass; anything else does not.
	GuestInputs string `json:"guestInputs,omitempty"`
	// ServedBy are the LoadBalancer Services of the guest whose status held the address at the last
	// look, kube-vip having bound it: "namespace/name", at most five, then how many more.
	ServedBy string `json:"servedBy,omitempty"`
	// ServePendingSince is when the guest was first seen asking for the address, or starting the
	// operator's kube-vip, without serving it yet: the start of the grace period (RFC 3339).
	ServePendingSince string `json:"servePendingSince,omitempty"`
	// KubevipReleases are the Helm releases the operator last applied in the guest cluster, as the
	// management side remembers them. A release record in the guest is used as the base of an
	// upgrade only when its manifest is one of these: the guest cannot forge what is written here.
	KubevipReleases []GuestRelease `json:"kubevipReleases,omitempty"`
	// KeptAddresses are the addresses the guest cluster's FloatingIPs gave up that stay out of
	// their ranges because a Service of the guest may still serve them, or because the cluster's
	// retention keeps them, as the last guest pass saw them.
	KeptAddresses []KeptAddress `json:"keptAddresses,omitempty"`
	// DNSNames are the names published for the address (its range's spec.dns), as the
	// FloatingIP's DNSEndpoint has them.
	DNSNames []string `json:"dnsNames,omitempty"`
	// ObservedGeneration is the spec generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready, Allocated, GuestConfigured, KubevipInstalled and Served, each with a
	// reason; DNSPublished where the range publishes names (it leaves Ready as it is); and a
	// Warning (AddressOnAnotherNetwork) while the address is of a range that names
	// another network than the guest cluster's; Warning leaves Ready as it is.
	// While Ready is False, Reconciling is True when the reason passes by itself (the guest
	// cluster still being provisioned, the range not created yet, the address not held yet), and
	// Stalled is True when a person must act (IPConflict, RangeExhausted, a refused chart); both
	// carry Ready's reason and message and are absent otherwise. kstatus and Rancher's UI read
	// them as in progress and as failed.
	Conditions []genericcondition.GenericCondition `json:"conditions,omitempty"`
}

// KeptAddress is an address kept for the guest cluster after its FloatingIP gave it up.
type KeptAddress struct {
	// Address is the kept address.
	Address string `json:"address"`
	// Range is the FloatingIPRange it was handed out from.
	Range string `json:"range"`
	// Allocation is the FloatingIPAllocation that keeps it: deleting it frees the address at once.
	Allocation string `json:"allocation"`
	// Until is when it is released if no guest pass finds a Service serving it meanwhile.
	Until metav1.Time `json:"until"`
	// WhileServed is true when it is kept while the guest's Services serve it, false when the
	// cluster's retention keeps it (addressRetention).
	WhileServed bool `json:"whileServed,omitempty"`
	// ServedBy are the Services of the guest that asked for or held it at the last read.
	ServedBy string `json:"servedBy,omitempty"`
}

// GuestRelease is one Helm release the operator applied in a guest cluster.
type GuestRelease struct {
	// Namespace is the release's namespace in the guest.
	Namespace string `json:"namespace"`
	// Name is the release's name.
	Name string `json:"name"`
	// Chart is the chart and its version, such as kube-vip-0.9.9.
	Chart string `json:"chart,omitempty"`
	// Revision is the release's revision the operator applied.
	Revision int `json:"revision"`
	// ManifestDigest is the SHA-256 of the manifest the operator applied ("sha256:<hex>").
	ManifestDigest string `json:"manifestDigest"`
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
	// Priority orders the ranges a guest cluster's address may come from: those of its Harvester
	// cluster and VM network (for the second address of a dual-stack cluster, of that family)
	// whose clusterSelector admits it. The higher priority comes first, ranges of equal priority
	// by name; a range without one has priority 0, so a negative priority makes a fallback range,
	// used once the others are full. The first range in this order with a free address gives the
	// address, and a FloatingIP waiting in RangeExhausted moves on to the next range with room as
	// soon as there is one. A change of priority affects new allocations and waiting FloatingIPs
	// only: no held address moves.
	Priority int32 `json:"priority,omitempty"`
	// ClusterSelector limits the range to the guest clusters whose Rancher provisioning cluster
	// (clusters.provisioning.cattle.io, in fleet-default) has labels it matches: the Labels of
	// Rancher's cluster form. Without it every guest cluster of the range's Harvester cluster and
	// network may take its addresses; an empty selector ({}) admits every guest cluster too, and
	// no FloatingIP made by hand outside a guest cluster. A selector that no cluster matches hands
	// out nothing, and the range's Warning condition says so. A FloatingIP that holds an address
	// here keeps it when the selector or the cluster's labels change: only new allocations are
	// judged.
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// MaxAddressesPerCluster caps how many of the range's addresses the FloatingIPs of one guest
	// cluster (one c-m- namespace) may hold; 0 or unset, no cap. A FloatingIP the cap refuses
	// moves to the next range in selection order with room, or waits with the reason
	// ClusterLimitReached. Lowering the cap takes no held address away.
	MaxAddressesPerCluster int32 `json:"maxAddressesPerCluster,omitempty"`
	// DNS publishes a DNS name for each FloatingIP holding one of the range's addresses: an A
	// (IPv4) or AAAA (IPv6) record through external-dns's DNSEndpoint resource
	// (externaldns.k8s.io/v1alpha1), in the FloatingIP's namespace of the local cluster, so that
	// one external-dns there serves every guest and no DNS credential reaches a guest. Unset, no
	// name is published. See docs/names.md.
	DNS *RangeDNS `json:"dns,omitempty"`
	// Ingress puts the guests' bundled ingress controller (RKE2's rke2-ingress-nginx or
	// rke2-traefik) on their addresses of this range, on ports 80 and 443: the operator keeps a
	// LoadBalancer Service kube-system/kube-fip-ingress for the controller's pods in each guest,
	// which kube-vip serves as any other. A guest cluster labelled
	// kubefip.k8s.binbash.org/ingress=true gets it whatever its range says, and one labelled false
	// never does. See docs/names.md.
	Ingress bool `json:"ingress,omitempty"`
}

// RangeDNS is how a range names its FloatingIPs' addresses.
type RangeDNS struct {
	// Zone the names are published in, for example guests.example.com: lowercase DNS labels, as
	// external-dns's --domain-filter names it.
	Zone string `json:"zone" wrangler:"required"`
	// Name is the name's part before the zone: DNS labels in which {cluster} stands for the guest
	// cluster's name in Rancher (its provisioning cluster); default {cluster}, so that a guest
	// cluster demo is demo.<zone>. A FloatingIP whose name this would share with another guest
	// cluster's is refused the name (DNSNameTaken); nothing is overwritten.
	Name string `json:"name,omitempty"`
	// Wildcard publishes *.<name>.<zone> too, with the same address: every host name under the
	// cluster's name reaches its ingress.
	Wildcard bool `json:"wildcard,omitempty"`
	// TTL is the records' time to live in seconds; default 60. Resolvers may keep the old address
	// that long once the address changes.
	TTL int64 `json:"ttl,omitempty"`
}

// FloatingIPRangeStatus is the record of the pool's allocations and its counts.
type FloatingIPRangeStatus struct {
	// Capacity is the number of addresses the pool can hand out, in decimal (an IPv6 pool can hold
	// more than 64 bits of addresses).
	Capacity string `json:"capacity,omitempty"`
	// Used is the number of addresses held by FloatingIPs.
	Used int64 `json:"used"`
	// Retained is the number of addresses kept for guest clusters: deleted ones, until they come
	// back or their retention ends, and running ones whose Services may still serve an address
	// their FloatingIP gave up.
	Retained int64 `json:"retained,omitempty"`
	// Available is Capacity minus Used and Retained, in decimal.
	Available string `json:"available,omitempty"`
	// CapacityCount is Capacity as an integer, for list views that sort by it. It is left out,
	// never clamped, when Capacity does not fit in a signed 64-bit integer (an IPv6 pool of a /64
	// or a shorter prefix); Capacity always holds the exact count.
	CapacityCount *int64 `json:"capacityCount,omitempty"`
	// AvailableCount is Available as an integer, left out like CapacityCount when it does not fit
	// in a signed 64-bit integer; Available always holds the exact count.
	AvailableCount *int64 `json:"availableCount,omitempty"`
	// UsedPercent is (Used + Retained) / Capacity in whole percent, rounded down, so that 100 means
	// every address is taken. It is 0 when Capacity is 0 and at most 100, also when more addresses
	// are held than the pool has (after the pool shrank).
	UsedPercent int64 `json:"usedPercent"`
	// Allocations is the record of held addresses written by releases before FloatingIPAllocation
	// objects (address to FloatingIP). The operator adopts each entry as a FloatingIPAllocation and
	// then removes it, so it is empty once a range is migrated; the held addresses are listed by
	// kubectl get fipalloc -l kubefip.k8s.binbash.org/range=<name>.
	Allocations map[string]Allocation `json:"allocations,omitempty"`
	// ClusterSelector is spec.clusterSelector as Kubernetes writes a label selector
	// (env=prod,tier in (a,b)), for list views; empty without one.
	ClusterSelector string `json:"clusterSelector,omitempty"`
	// ObservedGeneration is the spec generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready (with a reason when the range is invalid, overlaps another or names a
	// Harvester cluster Rancher does not know) and the deletion and shrink guards. While Ready is
	// False, Reconciling is True when the reason passes by itself (DeletionBlocked,
	// SpaceChangePending: waiting for addresses to be released), and Stalled is True when a person
	// must act (InvalidRange, Overlap, OrphanedAllocations, UnknownHarvesterCluster); both carry
	// Ready's reason and message and are absent otherwise. Warning, for a valid range that is
	// almost certainly not what was meant, leaves it Ready.
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
	// LabelAddress is the held address as AllocationAddressText writes it (10.135.10.201, or an
	// IPv6 address expanded with - for :), on a FloatingIPAllocation.
	LabelAddress = "kubefip.k8s.binbash.org/address"
	// LabelSpace is the short hash of the address space (AddressSpace.Hash), the suffix of the
	// allocation's name.
	LabelSpace = "kubefip.k8s.binbash.org/space"
	// LabelHarvesterCluster and LabelHarvesterNetwork carry LabelValue of the space's two names.
	LabelHarvesterCluster = "kubefip.k8s.binbash.org/harvester-cluster"
	LabelHarvesterNetwork = "kubefip.k8s.binbash.org/harvester-network"
	// LabelState is Held or Retained on a FloatingIPAllocation.
	LabelState = "kubefip.k8s.binbash.org/state"
	// LabelRetainedFor carries LabelValue of the provisioning cluster's name a retained address is
	// kept for.
	LabelRetainedFor = "kubefip.k8s.binbash.org/retained-for"
	// AnnotationProvisioningCluster marks a FloatingIP discovery created with its Rancher
	// provisioning cluster ("fleet-default/demo"): the FloatingIP is found and deleted when that
	// cluster is gone, even when the operator was down meanwhile, and the address retained for the
	// cluster goes back to the next FloatingIP of a cluster of that name.
	AnnotationProvisioningCluster = "kubefip.k8s.binbash.org/provisioning-cluster"
	// AnnotationRangeSelection, on a FloatingIP the operator moved to another range, says why the
	// ranges before that one in selection order were passed over; written with the move, so that
	// the Allocated condition can say it on every pass.
	AnnotationRangeSelection = "kubefip.k8s.binbash.org/range-selection"
	// LabelIngress on a guest cluster (its provisioning cluster, or its management cluster):
	// "true" puts its ingress controller on its address whatever its range's spec.ingress says,
	// "false" never does.
	LabelIngress = "kubefip.k8s.binbash.org/ingress"
	// AnnotationGuestNamespace, on a FloatingIP, names one namespace of its guest cluster: the address
	// is written to the guest as that namespace's pool (cidr-<namespace>), which its Services take
	// before the global one, instead of into cidr-global.
	AnnotationGuestNamespace = "kubefip.k8s.binbash.org/guest-namespace"
	// AnnotationProposedAddress marks a FloatingIP's spec.ipaddress as the discovery controller's
	// proposal rather than a person's request: the operator may replace a proposal that was taken.
	AnnotationProposedAddress = "kubefip.k8s.binbash.org/proposed-address"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FloatingIPAllocation records that one address of one address space is held by one FloatingIP, or
// retained for a deleted guest cluster. Its name is the address and the space's hash
// (10.135.10.201.3f2a9c1b0d; an IPv6 address is fully expanded with - for :): creating it is the
// claim, so the API server lets exactly one object hold an address in a space; deleting it is the
// release. Its address, range and space never change.
type FloatingIPAllocation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the address, the range it was handed out from and its holder. Its address, range and
	// space never change: an address is released by deleting this object. Retained is set while the
	// address is kept for a guest cluster (deleted, or whose Services may still serve it); the owner
	// changes only when a FloatingIP of that cluster takes the address back, which clears retained.
	Spec FloatingIPAllocationSpec `json:"spec" wrangler:"required"`
}

// FloatingIPAllocationSpec is what an allocation records.
type FloatingIPAllocationSpec struct {
	// Address is the held address in canonical form, for example 10.135.10.201 or fd00:10::5. It is
	// the address the object's name encodes.
	Address string `json:"address" wrangler:"required"`
	// Range is the FloatingIPRange the address was handed out from.
	Range string `json:"range" wrangler:"required"`
	// Space is the address space the address is held in: the Harvester cluster and VM network of
	// the range (its harvesterClusterName and harvesterNetworkName annotations). The same address
	// may be held once in each space; the object's name encodes the space.
	Space AddressSpace `json:"space,omitempty"`
	// Owner is the FloatingIP holding the address; while the address is retained, the FloatingIP
	// that held it last.
	Owner FloatingIPReference `json:"owner" wrangler:"required"`
	// Retained, when set, keeps the address for a guest cluster that was deleted, or whose Services
	// may still serve it (whileServed): the next FloatingIP of a cluster with the same Rancher
	// provisioning namespace and name in this space gets it back. Nobody else gets it until it is
	// released or this object is deleted.
	Retained *Retention `json:"retained,omitempty"`
}

// AddressSpace is one Harvester cluster's VM network, as a FloatingIPRange's annotations name
// it. Ranges without the annotations share the space whose two names are empty.
type AddressSpace struct {
	// HarvesterClusterName is the range's harvesterClusterName annotation.
	HarvesterClusterName string `json:"harvesterClusterName,omitempty"`
	// HarvesterNetworkName is the range's harvesterNetworkName annotation.
	HarvesterNetworkName string `json:"harvesterNetworkName,omitempty"`
}

// Retention is for whom, and until when, an address is kept.
type Retention struct {
	// Cluster is the Rancher provisioning cluster the address is kept for. A cluster deleted and
	// created again under the same namespace and name gets a new c-m-* id but the same reference.
	Cluster ClusterReference `json:"cluster" wrangler:"required"`
	// Until is when the address is released if no FloatingIP of the cluster took it back. For an
	// address kept while served, it is when the address is released if the guest cannot be read
	// meanwhile: each guest pass that finds a Service serving it pushes it on.
	Until metav1.Time `json:"until" wrangler:"required"`
	// WhileServed marks an address a FloatingIP of a running guest cluster gave up (moved to
	// another range or address, or deleted) while the guest may still serve it: it is released
	// once a guest pass reads every Service of the guest and none asks for or holds it.
	WhileServed bool `json:"whileServed,omitempty"`
	// ServedBy are the Services of the guest that asked for or held the address at the last read
	// ("namespace/name", at most five, then how many more).
	ServedBy string `json:"servedBy,omitempty"`
}

// ClusterReference names a Rancher provisioning cluster (provisioning.cattle.io/v1 Cluster).
type ClusterReference struct {
	// Namespace is the provisioning cluster's namespace, normally fleet-default.
	Namespace string `json:"namespace" wrangler:"required"`
	// Name is the provisioning cluster's name.
	Name string `json:"name" wrangler:"required"`
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
