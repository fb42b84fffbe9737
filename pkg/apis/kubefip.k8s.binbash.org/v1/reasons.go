package v1

import corev1 "k8s.io/api/core/v1"

// Class tells what a condition or Event reason means for the object it is shown on. Rancher's UI
// (wrangler's summary), kstatus and the Event type all follow from it, so that progress is told
// from failure in one place.
type Class int

const (
	// Unclassified is a reason this file does not know; it is treated as a Failure, so that a
	// forgotten reason shows as something to look at, never as quiet progress.
	Unclassified Class = iota
	// Done: something is in effect or was done (Ready=True, or an Event of a change made).
	Done
	// Progress: the operator waits for something that comes by itself (a guest cluster being
	// provisioned, a range created, an address released). Ready=False with Reconciling=True, and
	// Normal Events.
	Progress
	// Notice: the object is in effect but deserves a person's look (a range of the whole address
	// space). Warning Events; never a reason of Ready=False.
	Notice
	// Failure: nothing changes until a person acts (an address held elsewhere, an exhausted
	// range, a refused chart). Ready=False with Stalled=True, and Warning Events.
	Failure
)

// Reasons of a FloatingIP's DNSPublished condition and its Events (pkg/controllers/dns).
const (
	// ReasonDNSPublished: external-dns took in the FloatingIP's DNSEndpoint as it is now.
	ReasonDNSPublished = "Published"
	// ReasonDNSPending: the FloatingIP's DNSEndpoint was written, and external-dns has not taken in
	// this version of it yet.
	ReasonDNSPending = "DNSPending"
	// ReasonDNSNameTaken: another guest cluster's FloatingIP (or another FloatingIP of the same
	// cluster and address family) has the name; it is not overwritten.
	ReasonDNSNameTaken = "DNSNameTaken"
	// ReasonDNSNameInvalid: the range's spec.dns gives this FloatingIP no valid DNS name.
	ReasonDNSNameInvalid = "DNSNameInvalid"
	// ReasonDNSEndpointsNotServed: the local cluster has no DNSEndpoint resource
	// (externaldns.k8s.io/v1alpha1): external-dns's CRD is not installed.
	ReasonDNSEndpointsNotServed = "DNSEndpointsNotServed"
	// ReasonDNSNotEnabled: the operator was deployed without the rights on DNSEndpoints (the
	// chart's dns.enabled).
	ReasonDNSNotEnabled = "DNSNotEnabled"
	// ReasonDNSWriteFailed: writing the FloatingIP's DNSEndpoint failed; retried.
	ReasonDNSWriteFailed = "DNSWriteFailed"
)

// Reasons of a FloatingIP's IngressServed condition (pkg/controllers/guestcluster).
const (
	// ReasonIngressServed: the operator's ingress Service holds the address in the guest.
	ReasonIngressServed = "IngressServed"
	// ReasonIngressPending: the ingress Service is written and does not hold the address yet.
	ReasonIngressPending = "IngressPending"
	// ReasonIngressNoController: no known ingress controller, or more than one, runs in the
	// guest's kube-system.
	ReasonIngressNoController = "IngressNoController"
	// ReasonIngressFailed: the ingress Service could not be written, or one of its name is not the
	// operator's.
	ReasonIngressFailed = "IngressFailed"
)

// Reasons of a FloatingIP's Allocated and Ready conditions and of its allocation Events
// (pkg/controllers/floatingip).
const (
	// ReasonAllocated: the FloatingIP holds its address in its range.
	ReasonAllocated = "Allocated"
	// ReasonReleased: the FloatingIP's address went back to its range (Event).
	ReasonReleased = "Released"
	// ReasonRetained: the FloatingIP of a deleted guest cluster went, and its address is kept for
	// a cluster re-created under the same name.
	ReasonRetained = "Retained"
	// ReasonAddressKept: the FloatingIP gave up an address its running guest cluster may still
	// serve, and the address stays out of the pool until no Service of the guest asks for or
	// holds it (Event).
	ReasonAddressKept = "AddressKept"
	// ReasonKeptAddressReleased: a guest pass read every Service of the guest and none asks for or
	// holds a kept address any more: it went back to its range (Event).
	ReasonKeptAddressReleased = "KeptAddressReleased"
	// ReasonRangeNotSet: the FloatingIP names no FloatingIPRange.
	ReasonRangeNotSet = "RangeNotSet"
	// ReasonRangeNotFound: the FloatingIPRange named does not exist (yet).
	ReasonRangeNotFound = "RangeNotFound"
	// ReasonRangeNotReady: the range cannot hand out addresses; its own Ready says why.
	ReasonRangeNotReady = "RangeNotReady"
	// ReasonRangeExhausted: the range has no free address.
	ReasonRangeExhausted = "RangeExhausted"
	// ReasonIPConflict: the address asked for is held by another FloatingIP.
	ReasonIPConflict = "IPConflict"
	// ReasonIPRetained: the address asked for is kept for a deleted guest cluster.
	ReasonIPRetained = "IPRetained"
	// ReasonOutOfRange: the address asked for is not inside the range.
	ReasonOutOfRange = "OutOfRange"
	// ReasonExcluded: the address asked for is in the range's spec.exclude.
	ReasonExcluded = "Excluded"
	// ReasonReserved: the address asked for is the range's network, broadcast or subnet-router
	// address.
	ReasonReserved = "Reserved"
	// ReasonInvalidAddress: spec.ipaddress is not an IP address.
	ReasonInvalidAddress = "InvalidAddress"
	// ReasonNamespaceNotAllowed: the FloatingIP is in a namespace of no Rancher guest cluster,
	// and its range does not list the namespace in spec.allowedNamespaces.
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"
	// ReasonAllocationFailed: claiming, recording or releasing the address failed for a reason
	// outside the FloatingIP (the API server, a webhook, a timeout); it is retried with backoff.
	ReasonAllocationFailed = "AllocationFailed"
	// ReasonClusterLimitReached: the guest cluster's FloatingIPs hold as many of the range's
	// addresses as its spec.maxAddressesPerCluster allows, and no other range in selection order
	// has room for the cluster.
	ReasonClusterLimitReached = "ClusterLimitReached"
	// ReasonClusterNotSelected: the range's spec.clusterSelector does not admit the FloatingIP's
	// guest cluster, and no other range in selection order does and has room; or, for discovery,
	// no range of the cluster's Harvester cluster and network admits it.
	ReasonClusterNotSelected = "ClusterNotSelected"
	// ReasonRangeChanged: the FloatingIP, refused an address by its range, moved to the next range
	// in selection order that has room (Event).
	ReasonRangeChanged = "RangeChanged"
	// ReasonAddressOnAnotherNetwork: the FloatingIP holds (or asks for) an address of a range that
	// names another network than its guest cluster's control-plane pool; it is kept, not moved
	// (the FloatingIP's Warning condition, set by discovery, and an Event).
	ReasonAddressOnAnotherNetwork = "AddressOnAnotherNetwork"
	// ReasonClaimedOnNetwork: the address asked for is one the range's Harvester cluster hands
	// out or uses on the range's network (a load balancer or DHCP pool, a virtual machine).
	ReasonClaimedOnNetwork = "ClaimedOnNetwork"
	// ReasonAddressInUse: a virtual machine of no guest cluster of this FloatingIP reports the
	// FloatingIP's address on the range's network: two hosts answer for one address (the
	// FloatingIP's Warning condition and an Event). The address is kept, not moved.
	ReasonAddressInUse = "AddressInUseOnNetwork"
)

// Reasons of a FloatingIP's GuestConfigured and KubevipInstalled conditions and of the guest
// operations' Events (pkg/controllers/guestcluster).
const (
	// ReasonNoInterfaceOnNetwork: control-plane nodes of the guest, named in the message, have no
	// NIC on the range's network, as their VMs in Harvester show them (KubevipInstalled).
	ReasonNoInterfaceOnNetwork = "NoInterfaceOnNetwork"
	// ReasonInterfaceNamesDiffer: the guest's control-plane nodes name their NIC on the range's
	// network differently, and kube-vip takes one name for every node (KubevipInstalled).
	ReasonInterfaceNamesDiffer = "InterfaceNamesDiffer"
	// ReasonWaitingForHarvester: the range's Harvester cluster is being read for the first time;
	// kube-vip is installed once the NIC it announces on is known (KubevipInstalled).
	ReasonWaitingForHarvester = "WaitingForHarvester"
	// ReasonConfigured: the guest's ConfigMap holds the address.
	ReasonConfigured = "Configured"
	// ReasonProvisioning: Rancher is still provisioning the guest cluster.
	ReasonProvisioning = "Provisioning"
	// ReasonDisconnected: Rancher's agent of the guest cluster is not connected, or the guest does
	// not answer through Rancher's cluster proxy.
	ReasonDisconnected = "Disconnected"
	// ReasonNotAllocated: the FloatingIP holds no address yet; nothing of it goes to the guest.
	ReasonNotAllocated = "NotAllocated"
	// ReasonClusterNotFound: Rancher has not created the cluster's objects (yet).
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonKubeconfigMissing: the guest's kubeconfig Secret, or its kubeconfig key, is not there.
	ReasonKubeconfigMissing = "KubeconfigMissing"
	// ReasonKubeconfigInvalid: the guest's kubeconfig does not parse or is not usable.
	ReasonKubeconfigInvalid = "KubeconfigInvalid"
	// ReasonKubeconfigRefused: the guest's kubeconfig names a server or credentials the operator
	// does not use.
	ReasonKubeconfigRefused = "KubeconfigRefused"
	// ReasonUnauthorized: Rancher refused the kubeconfig's token (401).
	ReasonUnauthorized = "Unauthorized"
	// ReasonNotClusterOwner: the guest refused the kubeconfig's Rancher user (403).
	ReasonNotClusterOwner = "NotClusterOwner"
	// ReasonConfigMapNotUpdated: a person's value in the guest's ConfigMap was left as it is.
	ReasonConfigMapNotUpdated = "ConfigMapNotUpdated"
	// ReasonConfigMapFailed: writing the guest's ConfigMap failed.
	ReasonConfigMapFailed = "ConfigMapFailed"
	// ReasonHelmFailed: installing or upgrading a release in the guest failed.
	ReasonHelmFailed = "HelmFailed"
	// ReasonChartFetching: a chart is still being fetched.
	ReasonChartFetching = "ChartFetching"
	// ReasonInternalError: the guest pass failed unexpectedly; it is retried.
	ReasonInternalError = "InternalError"
	// ReasonInstalled: kube-vip and kube-vip-cloud-provider are installed in the guest.
	ReasonInstalled = "Installed"
	// ReasonNotWanted: kubevipGuestInstall does not want kube-vip installed in this guest.
	ReasonNotWanted = "NotWanted"
	// ReasonServed: a LoadBalancer Service's status holds the address: kube-vip bound it.
	ReasonServed = "Served"
	// ReasonIdle: nothing in the guest asks for the address yet, and the operator's kube-vip (where
	// it installs one) is ready to serve it.
	ReasonIdle = "Idle"
	// ReasonServePending: kube-vip is starting, or a Service asks for the address and kube-vip has
	// not bound it yet; within the grace period.
	ReasonServePending = "ServePending"
	// ReasonNotServed: a Service asks for the address and, past the grace period, no Service's
	// status holds it.
	ReasonNotServed = "NotServed"
	// ReasonKubevipNotScheduled: the operator's kube-vip DaemonSet schedules no pod (its node
	// selector or tolerations match no node).
	ReasonKubevipNotScheduled = "KubevipNotScheduled"
	// ReasonKubevipNotReady: no pod of the operator's kube-vip DaemonSet is ready, past the grace
	// period (an image that cannot be pulled, a crash, a failed upgrade).
	ReasonKubevipNotReady = "KubevipNotReady"
	// ReasonKubevipMissing: the operator's kube-vip DaemonSet is not in the guest, though its
	// release is.
	ReasonKubevipMissing = "KubevipMissing"
	// ReasonServedUnknown: what serves the address could not be read from the guest.
	ReasonServedUnknown = "ServedUnknown"
	// ReasonServedReadLimited: no Service the operator read holds the address, and the guest holds
	// more kube-vip Services, or larger ones, than one look reads.
	ReasonServedReadLimited = "ServedReadLimited"
	// ReasonHarvesterKubevip: the Harvester cloud provider's kube-vip DaemonSet was kept off every
	// node of the guest (Event).
	ReasonHarvesterKubevip = "HarvesterKubevipDisabled"
	// ReasonHarvesterKubevipRestored: the node selector the operator had given the Harvester cloud
	// provider's kube-vip DaemonSet was removed, as the guest no longer wants the operator's
	// kube-vip (Event).
	ReasonHarvesterKubevipRestored = "HarvesterKubevipRestored"
	// ReasonReleaseRestored: objects of a release the operator applied in the guest were missing or
	// changed there, and were put back as that revision has them (Event).
	ReasonReleaseRestored = "ReleaseRestored"
	// ReasonKubevipHandedOver: the guest no longer wants the operator's kube-vip and the Harvester
	// cloud provider's kube-vip has a ready pod, so the operator's releases were uninstalled
	// (Event).
	ReasonKubevipHandedOver = "KubevipHandedOver"
	// ReasonHandOverPending: the guest no longer wants the operator's kube-vip, whose releases stay
	// until the Harvester cloud provider's kube-vip has a ready pod.
	ReasonHandOverPending = "KubevipHandOverPending"
	// ReasonInvalidGuestNamespace: the FloatingIP's guest-namespace annotation names no namespace
	// a pool can be written for.
	ReasonInvalidGuestNamespace = "InvalidGuestNamespace"
	// ReasonRancherSettings: Rancher's address settings cannot be read, so no guest kubeconfig can
	// be checked against them.
	ReasonRancherSettings = "RancherSettingsUnreadable"
	// ReasonRenderRefused: an object Helm rendered is not one the chart may create; nothing was
	// installed.
	ReasonRenderRefused = "RenderedObjectRefused"
	// ReasonKubevipRefused: the rendered kube-vip would misread a value; nothing was installed.
	ReasonKubevipRefused = "KubevipValuesRefused"
	// ReasonKubevipTranslated: a value was rendered in the form the image reads (Event).
	ReasonKubevipTranslated = "KubevipValuesTranslated"
	// ReasonKubevipIgnored: the image does not read some variables the chart sets (Event).
	ReasonKubevipIgnored = "KubevipEnvIgnored"
	// ReasonForeignRelease: the configured release holds another chart; it is left alone.
	ReasonForeignRelease = "ForeignRelease"
	// ReasonChartCredentials: the chart credentials Secret cannot be read, or does not say which
	// chart source it belongs to.
	ReasonChartCredentials = "ChartCredentialsInvalid"
	// ReasonChartSourceNotAllowed: kube-fip-config names a chart source outside the deployment's
	// allow-list (pkg/installpolicy); nothing is fetched from it.
	ReasonChartSourceNotAllowed = "ChartSourceNotAllowed"
	// ReasonChartValuesNotAllowed: kube-fip-config's chart values hold a key, shape, string or
	// image the values schema does not allow (pkg/installpolicy); nothing is installed with them.
	ReasonChartValuesNotAllowed = "ChartValuesNotAllowed"
	// ReasonChartRefused: the chart package has hooks, CRDs or dependencies, or is not the chart
	// and version asked for; nothing was installed.
	ReasonChartRefused = "ChartRefused"
	// ReasonImageTagMoved: the registry's tag of an image pinned by digest names another manifest
	// now; nothing was installed or upgraded, and what runs in the guest is left as it is
	// (pkg/imagedigest).
	ReasonImageTagMoved = "ImageTagMoved"
	// ReasonImageNotResolved: the registry did not say which manifest the tag of an image pinned
	// by digest names (no such tag, refused credentials, no answer); nothing was installed or
	// upgraded.
	ReasonImageNotResolved = "ImageNotResolved"
	// ReasonImagePullSecret: the deployment's image pull Secret is missing or not a Docker config,
	// or its copy could not be written into the guest; nothing was installed or upgraded.
	ReasonImagePullSecret = "ImagePullSecretInvalid"
	// ReasonPullSecretWritten: the operator's copy of the image pull Secret was created or updated
	// in the guest (Event).
	ReasonPullSecretWritten = "ImagePullSecretWritten"
	// ReasonUntrustedRecord: the guest's newest release record is not one the operator wrote (its
	// manifest matches no release the management side remembers); it was not used as the base of
	// the upgrade and nothing it lists was deleted (Event).
	ReasonUntrustedRecord = "UntrustedReleaseRecord"
	// ReasonRecordRefused: a release record in the guest is not what its Secret says (its name,
	// labels and the release inside disagree on which release and revision it is); nothing was
	// upgraded, recovered or removed over it.
	ReasonRecordRefused = "ReleaseRecordRefused"
)

// Reasons of the Events on the operator's configuration ConfigMap (pkg/controllers/configmap).
// A problem of the configuration uses the problem's kind as its reason; those are defined in
// pkg/config, which stays free of Kubernetes packages.
const (
	// ReasonReloaded: the configuration was read again and is in effect.
	ReasonReloaded = "Reloaded"
	// ReasonGuestChartsFetched: the configuration asks for the pinned guest charts from kube-vip's
	// repository and kube-vip is installed into guests, but the operator's image ships no bundled
	// archive of them: they are fetched from the network.
	ReasonGuestChartsFetched = "GuestChartsFetched"
)

// Reasons of a FloatingIPRange's Ready and Warning conditions (pkg/controllers/floatingiprange,
// pkg/allocation).
const (
	// ReasonReady: the range hands out addresses.
	ReasonReady = "Ready"
	// ReasonDeletionBlocked: the range is being deleted while FloatingIPs still hold addresses
	// in it.
	ReasonDeletionBlocked = "DeletionBlocked"
	// ReasonStatusUpdateFailed: the range's status could not be written (too large, rejected, the
	// API server failing); it is retried.
	ReasonStatusUpdateFailed = "StatusUpdateFailed"
	// ReasonInvalidRange: the range's spec is not a usable range.
	ReasonInvalidRange = "InvalidRange"
	// ReasonOverlap: the range overlaps another range of its address space.
	ReasonOverlap = "Overlap"
	// ReasonOrphanedAllocations: the range records allocations it cannot hold.
	ReasonOrphanedAllocations = "OrphanedAllocations"
	// ReasonSpaceChangePending: the range's annotations put it in another address space while it
	// holds addresses in its former one.
	ReasonSpaceChangePending = "SpaceChangePending"
	// ReasonWholeAddressSpace: spec.iprange is 0.0.0.0/0 or ::/0, every address there is
	// (Warning).
	ReasonWholeAddressSpace = "WholeAddressSpace"
	// ReasonNoCapacity: the excludes (or a prefix with only reserved addresses) leave nothing to
	// hand out (Warning).
	ReasonNoCapacity = "NoCapacity"
	// ReasonNoClusterSelected: spec.clusterSelector matches none of Rancher's provisioning
	// clusters, so the range hands out nothing for now (Warning).
	ReasonNoClusterSelected = "NoClusterSelected"
	// ReasonUnknownHarvesterCluster: the range's harvesterClusterName is the display name of no
	// management cluster Rancher has, so discovery gives no guest cluster an address from it.
	ReasonUnknownHarvesterCluster = "UnknownHarvesterCluster"
	// ReasonHarvesterClaims: the range overlaps what its Harvester cluster hands out or uses on
	// the range's network (a load balancer or DHCP pool, a virtual machine's address), named in the
	// message; those addresses are not handed out (Warning).
	ReasonHarvesterClaims = "HarvesterClaimsAddresses"
	// ReasonHarvesterNotRead: the range's Harvester cluster could not be read, or not wholly, so
	// conflicts with its pools and virtual machines are not known; allocation goes on (Warning).
	ReasonHarvesterNotRead = "HarvesterNotRead"
	// ReasonNetworkNotFound: the Harvester cluster has no NetworkAttachmentDefinition of the
	// range's harvesterNetworkName, or several of that bare name, so the range's layer-2 segment is
	// not known and its name as written is its address space (Warning).
	ReasonNetworkNotFound = "NetworkNotFound"
)

// Reasons of the Events discovery records on a Rancher provisioning cluster
// (pkg/controllers/discovery, pkg/harvester).
const (
	// ReasonFloatingIPCreated: discovery created the guest cluster's FloatingIP.
	ReasonFloatingIPCreated = "FloatingIPCreated"
	// ReasonFloatingIPDeleted: discovery deleted a FloatingIP the guest cluster no longer needs.
	ReasonFloatingIPDeleted = "FloatingIPDeleted"
	// ReasonNoControlPlanePool: the cluster has Harvester machine pools but none with the
	// control-plane role, whose network the address must be on.
	ReasonNoControlPlanePool = "NoControlPlanePool"
	// ReasonNoMachineConfigRef: the control-plane pool names no machine configuration.
	ReasonNoMachineConfigRef = "NoMachineConfigRef"
	// ReasonNoCloudCredential: neither the pool nor the cluster names a cloud credential.
	ReasonNoCloudCredential = "NoCloudCredential"
	// ReasonInvalidCloudCredential: the credential reference or the credential itself is unusable.
	ReasonInvalidCloudCredential = "InvalidCloudCredential"
	// ReasonInvalidHarvesterCluster: the Harvester management cluster has no display name.
	ReasonInvalidHarvesterCluster = "InvalidHarvesterCluster"
	// ReasonInvalidNetwork: the HarvesterConfig names no usable VM network.
	ReasonInvalidNetwork = "InvalidNetwork"
	// ReasonNetworkWithoutNamespace: networkName is a bare name; it is used, but said so, because
	// Harvester networks live in a namespace and two namespaces may hold the same name.
	ReasonNetworkWithoutNamespace = "NetworkNameWithoutNamespace"
	// ReasonNoMatchingRange: no FloatingIPRange is annotated with the cluster's Harvester cluster.
	ReasonNoMatchingRange = "NoMatchingRange"
	// ReasonRangeNetworkMismatch: ranges exist for the Harvester cluster but none for the network;
	// the first by name of those that name no network is used.
	ReasonRangeNetworkMismatch = "RangeNetworkMismatch"
	// ReasonNoRangeForNetwork: the Harvester cluster's ranges all name other networks; the cluster
	// gets no FloatingIP until a range of its network (or one that names none) exists.
	ReasonNoRangeForNetwork = "NoRangeForNetwork"
	// ReasonNoRangeForFamily: the cluster is dual-stack, but its network has no range of one of the
	// two families; the other family's FloatingIP is made all the same.
	ReasonNoRangeForFamily = "NoRangeForFamily"
)

// GuestState is a guest cluster's state as a FloatingIP's status.guestState shows it after a
// guest pass.
type GuestState string

// The guest states. Provisioning, Disconnected and Configured are also reasons of the
// GuestConfigured condition (ReasonProvisioning, ReasonDisconnected, ReasonConfigured).
const (
	// GuestStatePending: the pass waits for something of Rancher's or the FloatingIP's (a cluster, a
	// kubeconfig, an address).
	GuestStatePending GuestState = "Pending"
	// GuestStateProvisioning: Rancher is still provisioning the guest cluster.
	GuestStateProvisioning GuestState = "Provisioning"
	// GuestStateDisconnected: the guest cluster cannot be reached through Rancher.
	GuestStateDisconnected GuestState = "Disconnected"
	// GuestConfigured: the guest's ConfigMap was written (or a person's value in it left alone).
	GuestStateConfigured GuestState = "Configured"
	// GuestStateError: a person must act for the pass to go on.
	GuestStateError GuestState = "Error"
)

// Finalizers the operator's controllers put on its objects: wrangler's OnRemove names them
// "wrangler.cattle.io/" followed by the handler's name. They are stored on every object, so they
// never change.
const (
	// FloatingIPFinalizer holds a FloatingIP until its address is released.
	FloatingIPFinalizer = "wrangler.cattle.io/kube-fip-floatingip"
	// RangeFinalizer holds a FloatingIPRange while it still has allocations.
	RangeFinalizer = "wrangler.cattle.io/kube-fip-floatingiprange"
)

// ReasonRow is one row of the reason table: reasons of one class, shown in the same place, that
// call for the same action.
type ReasonRow struct {
	Reasons []string
	Class   Class
	// On is where the reasons are shown: an object (its Ready and the condition named in the
	// Troubleshooting text), a condition, or "... Event" for reasons only Events carry.
	On string
	// Do is what a person does about it, in Markdown.
	Do string
}

// ReasonTable lists every reason the operator writes into a condition or an Event: its class and
// what to do about it. It is the one source of both: go generate writes ClassOf's switch from it
// (zz_generated_reason_classes.go) and the reason table of docs/troubleshooting.md, whose links
// are written from the repository root. The reasons are defined
// above, but for the configuration's problems, which pkg/config defines since it imports nothing
// of Kubernetes; a test finds every reason in the code and fails on any not listed here.
func ReasonTable() []ReasonRow {
	return []ReasonRow{
		{[]string{ReasonAllocated, ReasonConfigured, ReasonInstalled, ReasonReady}, Done, "all", "nothing: in effect"},
		{[]string{ReasonNotWanted}, Done, "KubevipInstalled", "nothing: `kubevipGuestInstall` leaves this guest to you; label it `kube-vip=true` or choose `enabled` to have kube-vip installed"},

		// FloatingIP allocation (pkg/controllers/floatingip).
		{[]string{ReasonRangeNotSet}, Failure, "FloatingIP", "add the `fiprange` annotation naming a range"},
		// waiting for the range to be created
		{[]string{ReasonRangeNotFound}, Progress, "FloatingIP", "create the range it names, or name an existing one; it is allocated as soon as the range exists"},
		{[]string{ReasonRangeNotReady}, Failure, "FloatingIP", "fix the range: its own reason (below) is in the message"},
		{[]string{ReasonRangeExhausted}, Failure, "FloatingIP", "every range of the network that selects the cluster is full (the message names them): grow one or add another FloatingIPRange for the same Harvester cluster and network, and the FloatingIP [moves to it](docs/concepts.md#range-selection) by itself; retained addresses come free after `addressRetention`"},
		{[]string{ReasonClusterLimitReached}, Failure, "FloatingIP", "the cluster holds `spec.maxAddressesPerCluster` of the range's addresses and no other range has room for it: raise the cap, or add a range"},
		{[]string{ReasonClusterNotSelected}, Failure, "FloatingIP, provisioning cluster", "no range of the network whose `spec.clusterSelector` admits the cluster has room: label the cluster (Rancher: **Edit Config**, **Labels**) or widen a selector"},
		{[]string{ReasonAddressOnAnotherNetwork}, Notice, "FloatingIP Warning", "the address is of a range that names another network than the guest's control-plane pool, named in the message: kube-vip cannot serve it there. It is kept, not moved: create a range for the guest's network, then delete the FloatingIP, and discovery makes a new one from that range (the guest's address changes)"},
		{[]string{ReasonRangeChanged}, Done, "FloatingIP Event", "nothing: the FloatingIP moved to the next range in [selection order](docs/concepts.md#range-selection) with room; the Event names the ranges passed over"},
		{[]string{ReasonClaimedOnNetwork}, Failure, "FloatingIP", "the Harvester cluster hands out or uses the address asked for on the range's network (the range's `HarvesterClaimsAddresses` warning names what): give `spec.ipaddress` another address, or clear it to get the next free one"},
		{[]string{ReasonAddressInUse}, Failure, "FloatingIP Warning", "a virtual machine of the Harvester cluster that is no node of this guest reports the address on the range's network, named in the message: two hosts answer for it. The address is kept, not moved: take it off that VM (its static configuration, or the DHCP or load balancer pool that gave it), or delete the FloatingIP to have a new address allocated (alert `KubeFIPAddressInUseOnNetwork`)"},
		{[]string{ReasonIPConflict}, Failure, "FloatingIP", "another FloatingIP, named in the message, holds the address: give one of them another `spec.ipaddress`, or clear it to get the next free one"},
		// waiting for a retention to run out
		{[]string{ReasonIPRetained}, Progress, "FloatingIP", "the address is kept for another guest cluster until the time in the message: deleted, or [still serving it](docs/operations.md#when-an-address-is-given-up) through the Services the message names; wait, let those Services go in that guest, pick another address, or delete the `FloatingIPAllocation` the message names"},
		{[]string{ReasonOutOfRange, ReasonExcluded, ReasonReserved, ReasonInvalidAddress}, Failure, "FloatingIP", "`spec.ipaddress` is outside the range, in `spec.exclude`, a network/broadcast address or no address: correct it or clear it"},
		{[]string{ReasonNamespaceNotAllowed}, Failure, "FloatingIP", "use the guest cluster's `c-m-*` namespace, or list this namespace in the range's `spec.allowedNamespaces`"},
		{[]string{ReasonAllocationFailed}, Failure, "FloatingIP", "the API server refused the claim (a webhook, a quota, a timeout); it is retried; the message says why"},
		{[]string{ReasonReleased}, Done, "FloatingIP Event", "nothing: the address went back to its range"},
		{[]string{ReasonRetained}, Done, "FloatingIP Event", "nothing: the guest cluster was deleted and its address is kept for `addressRetention`, for a cluster created again under the same name"},
		{[]string{ReasonAddressKept}, Done, "FloatingIP Event", "nothing: the FloatingIP gave up an address its guest may still serve; it stays out of the pool until no Service of the guest asks for or holds it, or for `servedAddressHold` while the guest cannot be read ([when an address is given up](docs/operations.md#when-an-address-is-given-up)); `status.keptAddresses` lists it"},
		{[]string{ReasonKeptAddressReleased}, Done, "FloatingIP Event, or FloatingIPRange Event when the cluster has no FloatingIP left", "nothing: no Service of the guest asks for or holds the kept address any more, and it went back to its range"},

		// Guest cluster operations (pkg/controllers/guestcluster).
		// waiting for the address
		{[]string{ReasonNotAllocated}, Progress, "GuestConfigured", "nothing to do here: the address is not held yet; see `Allocated`"},
		// Rancher has not created the cluster's objects yet
		{[]string{ReasonClusterNotFound}, Progress, "GuestConfigured", "the `clustername` annotation names no provisioning cluster in `fleet-default`; correct it"},
		{[]string{ReasonProvisioning}, Progress, "GuestConfigured", "nothing: Rancher is still building the cluster"},
		// Rancher retries the agent's tunnel by itself
		{[]string{ReasonDisconnected}, Progress, "GuestConfigured", "the cluster's agent lost its tunnel to Rancher; check the cluster in Rancher"},
		// Rancher writes the Secret once the cluster is up
		{[]string{ReasonKubeconfigMissing}, Progress, "GuestConfigured", "Rancher has not written `fleet-default/<cluster>-kubeconfig` yet; check the cluster in Rancher"},
		{[]string{ReasonKubeconfigInvalid}, Failure, "GuestConfigured", "Rancher wrote an unusable `fleet-default/<cluster>-kubeconfig`; check the cluster in Rancher"},
		{[]string{ReasonKubeconfigRefused}, Failure, "GuestConfigured", "the guest kubeconfig names another server than Rancher's `server-url` / `internal-server-url`, or uses a plugin or file: check those settings ([guest kubeconfigs](docs/security.md#guest-kubeconfigs))"},
		{[]string{ReasonRancherSettings}, Failure, "GuestConfigured", "the operator cannot read Rancher's `server-url` and `internal-server-url` settings; check that they exist"},
		{[]string{ReasonUnauthorized}, Failure, "GuestConfigured", "the guest refuses the kubeconfig's token; Rancher rotates it, and the next pass reads it afresh"},
		{[]string{ReasonNotClusterOwner}, Failure, "GuestConfigured", "Rancher's user for the cluster lacks cluster-owner in the guest; check the cluster's members in Rancher"},
		{[]string{ReasonConfigMapNotUpdated}, Failure, "GuestConfigured", "the guest's ConfigMap holds another address in `cidr-global`: set `updateConfigMap: \"true\"` on the oldest FloatingIP of the cluster to overwrite it. A `cidr-<namespace>` or `range-<namespace>` a person wrote is never overwritten, `updateConfigMap` or not (the message names the key): delete it in the guest, or take the `kubefip.k8s.binbash.org/guest-namespace` annotation off the FloatingIP"},
		{[]string{ReasonConfigMapFailed}, Failure, "GuestConfigured", "writing the guest's ConfigMap failed; the message and the operator's log say why; retried"},
		{[]string{ReasonInvalidGuestNamespace}, Failure, "GuestConfigured", "the `kubefip.k8s.binbash.org/guest-namespace` annotation is not a namespace name; correct it"},
		{[]string{ReasonInternalError}, Failure, "GuestConfigured", "a bug while working on this guest; retried; report it with the operator's log"},
		{[]string{ReasonChartFetching}, Progress, "KubevipInstalled", "nothing: the chart is being downloaded; the pass comes back"},
		{[]string{ReasonHelmFailed}, Failure, "KubevipInstalled", "the Helm install or upgrade failed, or its chart could not be fetched; the message says why (a certificate of a CA not trusted names `additionalTrustedCAs`, a proxy's refusal names `proxy` and `noProxy`: [private CA and proxy](docs/airgap.md#private-ca-and-proxy))"},
		{[]string{ReasonChartSourceNotAllowed}, Failure, "KubevipInstalled, ConfigMap Event", "`kube-fip-config` names a chart source outside `security.allowedChartSources`; allow it in the form's **Security** group, or name an allowed one"},
		{[]string{ReasonChartValuesNotAllowed}, Failure, "KubevipInstalled, ConfigMap Event", "the chart values hold a key, shape or string the values schema does not allow, or an image outside `security.allowedImages`; the message names the key: change it ([value keys](docs/security.md#value-keys))"},
		{[]string{ReasonChartRefused}, Failure, "KubevipInstalled", "the chart archive's digest is neither the pinned one nor in `security.allowedChartDigests` (the message names it), or the archive is over its bounds, has hooks, a `crds/` folder or dependencies, or is not the chart and version asked for: install the pinned chart, or review the archive and allow its digest"},
		{[]string{ReasonChartCredentials}, Failure, "KubevipInstalled", "the Secret `security.chartCredentialsSecret` is missing or lacks `username`, `password` or `source`"},
		{[]string{ReasonImageTagMoved}, Failure, "KubevipInstalled", "the registry's tag of an image pinned by digest names another manifest (the message names both digests): what runs in the guest is left as it is; push the pinned image back under its tag, or review the new one and pin its digest in the chart values ([air gap](docs/airgap.md))"},
		{[]string{ReasonImageNotResolved}, Failure, "KubevipInstalled", "the registry did not say which manifest an image's tag names (the tag is missing, the credentials of `guestImages.pullSecret` are refused, its certificate is of a CA not trusted, the proxy refused, or it did not answer); mirror the image, fix the Secret, or set `additionalTrustedCAs` or `proxy` and `noProxy` as the message says ([air gap](docs/airgap.md), [private CA and proxy](docs/airgap.md#private-ca-and-proxy)); retried at every pass"},
		{[]string{ReasonImagePullSecret}, Failure, "KubevipInstalled", "the Secret `guestImages.pullSecret` is missing or not of type `kubernetes.io/dockerconfigjson`, or the guest holds a Secret `kube-fip-operator-registry` the operator did not write (delete it)"},
		{[]string{ReasonPullSecretWritten}, Done, "FloatingIP Event", "nothing: the operator's copy of the image pull Secret was written into the guest's release namespace"},
		{[]string{ReasonKubevipRefused}, Failure, "KubevipInstalled", "the kube-vip image cannot read a value as the chart sets it; change the chart version and image tag together ([the pinned pair](docs/design.md#the-pinned-chart-and-image-pair))"},
		{[]string{ReasonRenderRefused}, Failure, "KubevipInstalled", "the chart renders an object, field, label or privilege its own render with the product's defaults does not (where no value reaches), or its render overran its budget of time, output or memory (with the same values it is rendered again after a minute, doubling up to an hour); use the pinned chart and the value keys the security model lists"},
		{[]string{ReasonForeignRelease}, Failure, "KubevipInstalled", "a release of the configured name holds another chart; choose another `kubevipReleaseName`"},
		{[]string{ReasonRecordRefused}, Failure, "KubevipInstalled", "a release record in the guest, named in the message, holds another release or revision than its Secret's name and labels say (planted): nothing is upgraded or removed over it; delete that Secret in the guest"},
		{[]string{ReasonServed, ReasonIdle}, Done, "Served", "nothing: a Service's status holds the address, or nothing asks for it yet and kube-vip is ready"},
		// waiting for kube-vip to start or to bind the address
		{[]string{ReasonServePending}, Progress, "Served", "nothing yet: kube-vip is starting or binding the address; past the grace period this becomes `NotServed` or `KubevipNotReady`"},
		{[]string{ReasonNotServed}, Failure, "Served", "a Service asks for the address and no kube-vip announced it: check kube-vip's pods and logs in the guest (`vip_interface` must be the nodes' NIC) ([the guest side](docs/troubleshooting.md#ready-but-my-service-is-pending))"},
		{[]string{ReasonKubevipNotScheduled}, Failure, "Served", "kube-vip's DaemonSet matches no node: check its `nodeSelector` and `tolerations` in `kubevipChartValues` against the guest's control-plane nodes"},
		{[]string{ReasonKubevipNotReady}, Failure, "Served", "no kube-vip pod is ready; the message says why (an image that cannot be pulled, a crash): fix the image or values, and check the pod's logs in the guest"},
		{[]string{ReasonKubevipMissing}, Failure, "Served", "kube-vip's DaemonSet is gone from the guest and was not put back: the pass puts back what the release it remembers applying lost (`ReleaseRestored`), so its release record is none the operator applied (the `UntrustedReleaseRecord` Event says so); set `kubevipUpdate: \"true\"` once to install the configured revision over it"},
		{[]string{ReasonServedUnknown}, Failure, "Served", "the guest did not answer the operator's reads of kube-vip and its Services; retried; the message says why"},
		{[]string{ReasonServedReadLimited}, Failure, "Served", "the guest holds more kube-vip Services, or larger ones, than one look reads, and none read holds the address: the message names the limit and the Services naming too many addresses; delete or shrink them in the guest ([what a guest may cost](docs/security.md#what-a-guest-may-cost))"},
		{[]string{ReasonHarvesterKubevip}, Done, "FloatingIP Event", "nothing: the operator's kube-vip is ready, so the Harvester cloud provider's own kube-vip was kept off the guest's nodes, so that one kube-vip serves the address"},
		{[]string{ReasonHarvesterKubevipRestored}, Done, "FloatingIP Event", "nothing: the guest no longer wants the operator's kube-vip, so the Harvester cloud provider's kube-vip was given back its nodes"},
		{[]string{ReasonReleaseRestored}, Notice, "FloatingIP Event", "objects of the operator's release in the guest, named in the Event with the fields that differed, were deleted or edited there and were put back as the revision the operator applied: the release is the operator's to change. Change `kubevipChartValues` (with `kubevipUpdate`) instead, or take the guest out of `kubevipGuestInstall`"},
		{[]string{ReasonKubevipHandedOver}, Done, "FloatingIP Event", "nothing: the guest no longer wants the operator's kube-vip, the Harvester cloud provider's kube-vip has a ready pod, and the operator's releases and image pull Secret were uninstalled"},
		// waiting for the Harvester cloud provider's kube-vip to have a ready pod
		{[]string{ReasonHandOverPending}, Progress, "KubevipInstalled", "the guest no longer wants the operator's kube-vip, which stays installed until the Harvester cloud provider's kube-vip (`kube-system/kube-vip`) has a ready pod, so that a kube-vip always serves the address; the message says what it waits for. A guest without that DaemonSet keeps the operator's: label it `kube-vip=true` again, or uninstall the releases the message names in the guest ([hand-over](docs/operations.md#handing-a-guest-back-to-harvesters-kube-vip))"},
		{[]string{ReasonKubevipTranslated}, Done, "FloatingIP Event", "nothing: a chart value was rendered in the form the kube-vip image reads ([the pinned pair](docs/design.md#the-pinned-chart-and-image-pair))"},
		{[]string{ReasonKubevipIgnored}, Notice, "FloatingIP Event", "the kube-vip image does not read a variable the chart sets, named in the Event: remove it from the values, or change the chart version and image tag together"},
		{[]string{ReasonUntrustedRecord}, Notice, "FloatingIP Event", "the guest's newest release record is none the operator wrote (planted, or written before this version remembered its releases): it was not used to upgrade from and nothing it lists was deleted; nothing to do, unless you did not expect it"},

		// DNS names (pkg/controllers/dns).
		{[]string{ReasonDNSPublished}, Done, "DNSPublished", "nothing: external-dns took in the FloatingIP's DNSEndpoint as it is now ([what that proves](docs/names.md#what-published-says))"},
		// waiting for external-dns to read the DNSEndpoint
		{[]string{ReasonDNSPending}, Progress, "DNSPublished", "nothing yet: external-dns reads DNSEndpoints at its `--interval`, or at once with `--events`; if it stays, check that external-dns runs with `--source=crd` and its logs ([names](docs/names.md))"},
		{[]string{ReasonDNSNameTaken}, Failure, "DNSPublished", "the name is another guest cluster's (or another FloatingIP's of the same cluster and family), named in the message: give one of the ranges another `spec.dns.name` or zone"},
		{[]string{ReasonDNSNameInvalid}, Failure, "DNSPublished", "the range's `spec.dns` gives this FloatingIP no valid DNS name (the message says why: a label longer than 63 characters, a FloatingIP of no guest cluster): change `spec.dns.name`"},
		{[]string{ReasonDNSEndpointsNotServed}, Failure, "DNSPublished", "the local cluster has no `DNSEndpoint` resource: install external-dns's CRD and run external-dns with `--source=crd` ([names](docs/names.md)); the names are published once it is there"},
		{[]string{ReasonDNSNotEnabled}, Failure, "DNSPublished", "the range asks for names and the operator may not write DNSEndpoints: upgrade the chart with `dns.enabled: true` ([names](docs/names.md))"},
		{[]string{ReasonDNSWriteFailed}, Failure, "DNSPublished", "the FloatingIP's DNSEndpoint could not be written; retried; the message says why (check the operator's RBAC on `dnsendpoints`)"},

		// The guest's ingress controller (pkg/controllers/guestcluster).
		{[]string{ReasonIngressServed}, Done, "IngressServed", "nothing: the guest's ingress controller answers on the address, ports 80 and 443, through the operator's Service `kube-system/kube-fip-ingress`"},
		// waiting for kube-vip to bind the address to the ingress Service
		{[]string{ReasonIngressPending}, Progress, "IngressServed", "nothing yet: kube-vip-cloud-provider and kube-vip give the Service the address within seconds; if it stays, see the FloatingIP's `Served` condition"},
		{[]string{ReasonIngressNoController}, Failure, "IngressServed", "no pod of `rke2-ingress-nginx` or `rke2-traefik` runs in the guest's `kube-system`, or both do: the message says which; turn one on in the guest (RKE2's `ingress-controller`), or take the range's `spec.ingress` or the cluster's label away"},
		{[]string{ReasonIngressFailed}, Failure, "IngressServed", "the Service `kube-system/kube-fip-ingress` could not be written, or one of that name is not the operator's (the message says which): delete or rename that Service in the guest"},

		// FloatingIPRange (pkg/controllers/floatingiprange, pkg/allocation).
		{[]string{ReasonInvalidRange}, Failure, "FloatingIPRange", "`spec.iprange` or an exclude is not valid; correct it"},
		{[]string{ReasonOverlap}, Failure, "FloatingIPRange", "the range shares addresses with an older range of the same Harvester cluster and network; change or delete one"},
		{[]string{ReasonOrphanedAllocations}, Failure, "FloatingIPRange", "a shrink or new exclude would drop held addresses, named in the message; undo it, or release those first"},
		// waiting for its FloatingIPs to release their addresses, before it moves
		{[]string{ReasonSpaceChangePending}, Progress, "FloatingIPRange", "its annotations moved it to another Harvester cluster or network while it holds addresses; it moves once they are released"},
		// waiting for its FloatingIPs to release their addresses
		{[]string{ReasonDeletionBlocked}, Progress, "FloatingIPRange", "the deleted range still holds addresses; delete their FloatingIPs (or retained allocations)"},
		{[]string{ReasonStatusUpdateFailed}, Failure, "FloatingIPRange", "its status could not be written; retried; the Event and the operator's log say why"},
		{[]string{ReasonWholeAddressSpace, ReasonNoCapacity}, Notice, "FloatingIPRange Warning", "`0.0.0.0/0` or `::/0`, or nothing left to hand out after the excludes: almost certainly a typo"},
		{[]string{ReasonUnknownHarvesterCluster}, Failure, "FloatingIPRange", "`harvesterClusterName` is the display name of no cluster in Rancher, so no guest cluster gets an address from the range (FloatingIPs that name it still do): correct the annotation to the Harvester cluster's name in Rancher, or import that Harvester cluster; the range turns `Ready` by itself"},
		// waiting for the first read of the range's Harvester cluster
		{[]string{ReasonWaitingForHarvester}, Progress, "KubevipInstalled", "nothing: the range's Harvester cluster is read first, for the NIC kube-vip announces on; the install follows within seconds. If it stays, the range's `HarvesterNotRead` warning says why the cluster cannot be read"},
		{[]string{ReasonNoInterfaceOnNetwork}, Failure, "KubevipInstalled", "the guest's control-plane VMs named in the message have no NIC on the range's network in Harvester, so kube-vip cannot announce the address there: add a NIC on that network to the control-plane machine pool (Rancher: **Edit Config**, the pool's **Networks**), or use a range of a network the nodes have"},
		{[]string{ReasonInterfaceNamesDiffer}, Failure, "KubevipInstalled", "the guest's control-plane nodes, named in the message, call their NIC on the range's network by different names (different images): kube-vip takes one name for every node. Give the pool's nodes one image, or set `env.vip_interface` in `kubevipChartValues`"},
		{[]string{ReasonHarvesterClaims}, Notice, "FloatingIPRange Warning", "the Harvester cluster's load balancer or DHCP pools, or its virtual machines, hand out or use some of the range's addresses, named in the message: they are not handed out, and addresses already allocated there are reported on their FloatingIPs, not moved. Shrink or exclude them from the range, or move the Harvester pool, to make the warning go"},
		{[]string{ReasonHarvesterNotRead}, Notice, "FloatingIPRange Warning", "the range's Harvester cluster could not be read through Rancher, or a read limit ended the read (the message says which), so conflicts with its pools and VMs are not known: allocation goes on. Check that the Harvester cluster is connected in Rancher ([what the operator reads there](docs/security.md#what-the-operator-reads-in-a-harvester-cluster))"},
		{[]string{ReasonNetworkNotFound}, Notice, "FloatingIPRange Warning", "`harvesterNetworkName` names no VM network of the Harvester cluster, or a bare name several namespaces have: write it as `namespace/name` of an existing network; until then the name as written is the range's address space"},
		{[]string{ReasonNoClusterSelected}, Notice, "FloatingIPRange Warning", "`spec.clusterSelector` matches no provisioning cluster, so the range hands out nothing: check the selector against the clusters' labels"},

		// Discovery, on Rancher's provisioning clusters (pkg/controllers/discovery, pkg/harvester).
		{[]string{ReasonFloatingIPCreated, ReasonFloatingIPDeleted}, Done, "provisioning cluster Event", "nothing: discovery created the guest cluster's FloatingIP, or deleted one it no longer needs"},
		{[]string{ReasonNoMatchingRange}, Failure, "provisioning cluster Event", "no range has `harvesterClusterName` = the Harvester cluster's display name; creating one is enough (also counted in `kubefipoperator_discovery_no_matching_range_total`)"},
		{[]string{ReasonNoRangeForNetwork}, Failure, "provisioning cluster Event", "the Harvester cluster's ranges all name other networks, and none of their addresses is taken: create the range the Event names, annotated `harvesterClusterName` and `harvesterNetworkName` = the control-plane pool's network, and the FloatingIP is created by itself"},
		{[]string{ReasonRangeNetworkMismatch}, Notice, "provisioning cluster Event", "nothing, unless another range was meant: no range names the cluster's network, and one that names no network is used"},
		{[]string{ReasonNoRangeForFamily}, Notice, "provisioning cluster Event", "a dual-stack cluster's network has no range of one family; creating one is enough"},
		{[]string{ReasonInvalidCloudCredential}, Failure, "provisioning cluster Event", "the credential reference is not `namespace:name`, is outside `cattle-global-data`, or the Secret lacks `harvestercredentialConfig-clusterId`"},
		{[]string{ReasonNoCloudCredential}, Failure, "provisioning cluster Event", "a Harvester pool without any `cloudCredentialSecretName`"},
		{[]string{ReasonNoControlPlanePool, ReasonNoMachineConfigRef}, Failure, "provisioning cluster Event", "the machine pools name no control-plane pool or no `HarvesterConfig`"},
		{[]string{ReasonInvalidNetwork}, Failure, "provisioning cluster Event", "`networkInfo` is not JSON or lists no interface"},
		{[]string{ReasonNetworkWithoutNamespace}, Notice, "provisioning cluster Event", "`networkName` is a bare name, not `namespace/name`; it is used, but two namespaces may hold the same name"},
		{[]string{ReasonInvalidHarvesterCluster}, Failure, "provisioning cluster Event", "the Harvester management cluster has no `spec.displayName`"},

		// The operator's configuration (pkg/config, pkg/controllers/configmap).
		{[]string{ReasonReloaded}, Done, "ConfigMap Event", "nothing: `kube-fip-config` was read again and is in effect"},
		{[]string{ReasonGuestChartsFetched}, Notice, "ConfigMap Event", "the operator's image was built without the pinned guest charts (not by `make release`), so each install fetches them from kube-vip's chart repository, which an air-gapped operator cannot reach: run a release image, or name a chart repository inside the network ([Air gap](docs/airgap.md#charts-from-a-repository-inside-the-network))"},
		{[]string{"InvalidValue"}, Failure, "ConfigMap Event", "a value of `kube-fip-config` is refused and the previous good one stays in force (an invalid `kubevipGuestInstall` means `disabled`); the Event names the key: correct it ([kube-fip-config](docs/configuration.md#kube-fip-config))"},
		{[]string{"UnknownKey"}, Failure, "ConfigMap Event", "`kube-fip-config` has a key the operator does not know; the Event names the closest known key"},
		{[]string{"IncompleteChartSelection"}, Failure, "ConfigMap Event", "an OCI chart reference without its version: the pinned default version is used; set the version too"},
	}
}

// ClassOf is the class of reason; Unclassified when ReasonTable does not list it.
func ClassOf(reason string) Class {
	return classOf(reason)
}

// EventType is the Event type of reason: Normal for what was done and for progress, Warning for
// what deserves a person's look.
func EventType(reason string) string {
	switch ClassOf(reason) {
	case Done, Progress:
		return corev1.EventTypeNormal
	default:
		return corev1.EventTypeWarning
	}
}

// Stalling tells whether a Ready=False with reason means a person must act: every reason but
// progress (a Notice or an unknown reason on Ready=False is not something that passes by itself).
func Stalling(reason string) bool {
	return ClassOf(reason) != Progress
}
