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
)

// Reasons of a FloatingIP's GuestConfigured and KubevipInstalled conditions and of the guest
// operations' Events (pkg/controllers/guestcluster).
const (
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
	// ReasonHarvesterKubevip: the Harvester cloud provider's kube-vip DaemonSet was kept off every
	// node of the guest (Event).
	ReasonHarvesterKubevip = "HarvesterKubevipDisabled"
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
	// ReasonUntrustedRecord: the guest's newest release record is not one the operator wrote (its
	// manifest matches no release the management side remembers); it was not used as the base of
	// the upgrade and nothing it lists was deleted (Event).
	ReasonUntrustedRecord = "UntrustedReleaseRecord"
)

// Reasons of the Events on the operator's configuration ConfigMap (pkg/controllers/configmap).
// A problem of the configuration uses the problem's kind as its reason; those are defined in
// pkg/config, which stays free of Kubernetes packages.
const (
	// ReasonReloaded: the configuration was read again and is in effect.
	ReasonReloaded = "Reloaded"
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
	// the first by name is used.
	ReasonRangeNetworkMismatch = "RangeNetworkMismatch"
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

// classified lists every reason the operator writes into a condition or an Event, with its class.
// The reasons are defined above, but for the configuration's problems, which pkg/config defines
// since it imports nothing of Kubernetes; a test finds every reason in the code and fails on any
// not listed here. It is a function, not a variable,
// so that nothing can change it.
func classified() map[string]Class {
	return map[string]Class{
		// FloatingIP allocation (pkg/controllers/floatingip).
		ReasonAllocated:           Done,
		ReasonReleased:            Done,
		ReasonRetained:            Done,
		ReasonRangeNotFound:       Progress, // waiting for the range to be created
		ReasonIPRetained:          Progress, // waiting for a retention to run out
		ReasonRangeNotSet:         Failure,
		ReasonRangeNotReady:       Failure, // the range's own Ready says why
		ReasonRangeExhausted:      Failure,
		ReasonIPConflict:          Failure,
		ReasonOutOfRange:          Failure,
		ReasonExcluded:            Failure,
		ReasonReserved:            Failure,
		ReasonInvalidAddress:      Failure,
		ReasonNamespaceNotAllowed: Failure,
		ReasonAllocationFailed:    Failure,
		ReasonClusterLimitReached: Failure,
		ReasonClusterNotSelected:  Failure,
		ReasonRangeChanged:        Done,

		// Guest cluster operations (pkg/controllers/guestcluster).
		ReasonConfigured:            Done,
		ReasonInstalled:             Done,
		ReasonNotWanted:             Done,
		ReasonHarvesterKubevip:      Done,
		ReasonKubevipTranslated:     Done,
		ReasonProvisioning:          Progress,
		ReasonDisconnected:          Progress, // Rancher retries the agent's tunnel by itself
		ReasonNotAllocated:          Progress, // waiting for the address
		ReasonClusterNotFound:       Progress, // Rancher has not created the cluster's objects yet
		ReasonKubeconfigMissing:     Progress, // Rancher writes the Secret once the cluster is up
		ReasonChartFetching:         Progress,
		ReasonKubevipIgnored:        Notice,
		ReasonKubeconfigInvalid:     Failure,
		ReasonKubeconfigRefused:     Failure,
		ReasonUnauthorized:          Failure,
		ReasonNotClusterOwner:       Failure,
		ReasonConfigMapNotUpdated:   Failure,
		ReasonConfigMapFailed:       Failure,
		ReasonHelmFailed:            Failure,
		ReasonInternalError:         Failure,
		ReasonInvalidGuestNamespace: Failure,
		ReasonRancherSettings:       Failure,
		ReasonRenderRefused:         Failure,
		ReasonKubevipRefused:        Failure,
		ReasonForeignRelease:        Failure,
		ReasonChartCredentials:      Failure,
		ReasonChartRefused:          Failure,
		ReasonUntrustedRecord:       Notice,

		// The operator's configuration (pkg/config, pkg/controllers/configmap); the two chart
		// policy refusals are also reasons of GuestConfigured and KubevipInstalled.
		ReasonReloaded:              Done,
		ReasonChartSourceNotAllowed: Failure,
		ReasonChartValuesNotAllowed: Failure,
		"InvalidValue":              Failure,
		"UnknownKey":                Failure,
		"IncompleteChartSelection":  Failure,

		// FloatingIPRange (pkg/controllers/floatingiprange, pkg/allocation).
		ReasonReady:               Done,
		ReasonDeletionBlocked:     Progress, // waiting for its FloatingIPs to release their addresses
		ReasonSpaceChangePending:  Progress, // the same, before it moves to its new address space
		ReasonWholeAddressSpace:   Notice,
		ReasonNoCapacity:          Notice,
		ReasonNoClusterSelected:   Notice,
		ReasonInvalidRange:        Failure,
		ReasonOverlap:             Failure,
		ReasonOrphanedAllocations: Failure,
		ReasonStatusUpdateFailed:  Failure,

		// Discovery, on Rancher's provisioning clusters (pkg/controllers/discovery, pkg/harvester).
		ReasonFloatingIPCreated:       Done,
		ReasonFloatingIPDeleted:       Done,
		ReasonNetworkWithoutNamespace: Notice,
		ReasonRangeNetworkMismatch:    Notice,
		ReasonNoRangeForFamily:        Notice,
		ReasonNoControlPlanePool:      Failure,
		ReasonNoMachineConfigRef:      Failure,
		ReasonNoCloudCredential:       Failure,
		ReasonInvalidCloudCredential:  Failure,
		ReasonInvalidHarvesterCluster: Failure,
		ReasonInvalidNetwork:          Failure,
		ReasonNoMatchingRange:         Failure,
	}
}

// ClassOf is the class of reason; Unclassified when it is not listed.
func ClassOf(reason string) Class {
	return classified()[reason]
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
