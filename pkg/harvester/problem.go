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
