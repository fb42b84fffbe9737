// Package harvester reads what Rancher records about a guest cluster provisioned on Harvester —
// which machine pool runs the control plane, which cloud credential it uses, which VM network its
// HarvesterConfig names — and picks the FloatingIPRange for it.
//
// Everything here is a plain function over Rancher's types and decoded JSON, with no client, so
// that every malformed value a person, a script or an older Rancher may write is covered by table
// tests and fuzzing. A value that cannot be used is a *problem.Problem with a reason and a message meant
// for a Kubernetes Event; nothing here panics or echoes a credential's data.
package harvester

import (
	"fmt"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// Reasons of the Events the discovery controller records on a provisioning cluster.
const (
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

// maxQuoted bounds how much of a value a message repeats: enough to recognise it, never a wall of
// text in an Event.
const maxQuoted = 80

// quote quotes s for a message, shortened when long.
func quote(s string) string {
	if len(s) > maxQuoted {
		return fmt.Sprintf("%q...", s[:maxQuoted])
	}
	return fmt.Sprintf("%q", s)
}

// clip shortens s for a message where it is not quoted.
func clip(s string) string { return redact.Shorten(s, maxQuoted, "...") }

// Clip shortens a value read from Rancher's objects (a display name) for a message or a metric
// label, like the values the Problems of this package repeat.
func Clip(s string) string { return clip(s) }
