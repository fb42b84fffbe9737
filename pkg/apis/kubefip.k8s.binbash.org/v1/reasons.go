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

// classified lists every reason the operator writes into a condition or an Event, with its class.
// The reasons are defined next to their writers (the packages named below); a test finds every
// one of them in the code and fails on any not listed here. It is a function, not a variable,
// so that nothing can change it.
func classified() map[string]Class {
	return map[string]Class{
		// FloatingIP allocation (pkg/controllers/floatingip).
		"Allocated":           Done,
		"Released":            Done,
		"Retained":            Done,
		"RangeNotFound":       Progress, // waiting for the range to be created
		"IPRetained":          Progress, // waiting for a retention to run out
		"RangeNotSet":         Failure,
		"RangeNotReady":       Failure, // the range's own Ready says why
		"RangeExhausted":      Failure,
		"IPConflict":          Failure,
		"OutOfRange":          Failure,
		"Excluded":            Failure,
		"Reserved":            Failure,
		"InvalidAddress":      Failure,
		"NamespaceNotAllowed": Failure,
		"AllocationFailed":    Failure,

		// Guest cluster operations (pkg/controllers/guestcluster).
		"Configured":                Done,
		"Installed":                 Done,
		"NotWanted":                 Done,
		"HarvesterKubevipDisabled":  Done,
		"KubevipValuesTranslated":   Done,
		"Provisioning":              Progress,
		"Disconnected":              Progress, // Rancher retries the agent's tunnel by itself
		"NotAllocated":              Progress, // waiting for the address
		"ClusterNotFound":           Progress, // Rancher has not created the cluster's objects yet
		"KubeconfigMissing":         Progress, // Rancher writes the Secret once the cluster is up
		"ChartFetching":             Progress,
		"KubevipEnvIgnored":         Notice,
		"KubeconfigInvalid":         Failure,
		"KubeconfigRefused":         Failure,
		"Unauthorized":              Failure,
		"NotClusterOwner":           Failure,
		"ConfigMapNotUpdated":       Failure,
		"ConfigMapFailed":           Failure,
		"HelmFailed":                Failure,
		"InternalError":             Failure,
		"InvalidGuestNamespace":     Failure,
		"RancherSettingsUnreadable": Failure,
		"RenderedObjectRefused":     Failure,
		"KubevipValuesRefused":      Failure,
		"ForeignRelease":            Failure,
		"ChartCredentialsInvalid":   Failure,

		// The operator's configuration (pkg/config, pkg/controllers/configmap); the two chart
		// policy refusals are also reasons of GuestConfigured and KubevipInstalled.
		"Reloaded":                 Done,
		"ChartSourceNotAllowed":    Failure,
		"ChartValuesNotAllowed":    Failure,
		"InvalidValue":             Failure,
		"UnknownKey":               Failure,
		"IncompleteChartSelection": Failure,

		// FloatingIPRange (pkg/controllers/floatingiprange, pkg/allocation).
		"Ready":               Done,
		"DeletionBlocked":     Progress, // waiting for its FloatingIPs to release their addresses
		"SpaceChangePending":  Progress, // the same, before it moves to its new address space
		"WholeAddressSpace":   Notice,
		"NoCapacity":          Notice,
		"InvalidRange":        Failure,
		"Overlap":             Failure,
		"OrphanedAllocations": Failure,
		"StatusUpdateFailed":  Failure,

		// Discovery, on Rancher's provisioning clusters (pkg/controllers/discovery, pkg/harvester).
		"FloatingIPCreated":           Done,
		"FloatingIPDeleted":           Done,
		"NetworkNameWithoutNamespace": Notice,
		"RangeNetworkMismatch":        Notice,
		"NoRangeForFamily":            Notice,
		"NoControlPlanePool":          Failure,
		"NoMachineConfigRef":          Failure,
		"NoCloudCredential":           Failure,
		"InvalidCloudCredential":      Failure,
		"InvalidHarvesterCluster":     Failure,
		"InvalidNetwork":              Failure,
		"NoMatchingRange":             Failure,
	}
}

// ClassOf is the class of reason; Unclassified when it is not listed.
func ClassOf(reason string) Class {
	return classified()[reason]
}

// Reasons returns every classified reason with its class, a copy the caller may keep.
func Reasons() map[string]Class {
	return classified()
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
