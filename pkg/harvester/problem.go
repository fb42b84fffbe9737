// Package harvester reads what Rancher records about a guest cluster provisioned on Harvester —
// which machine pool runs the control plane, which cloud credential it uses, which VM network its
// HarvesterConfig names — and picks the FloatingIPRange for it.
//
// Everything here is a plain function over Rancher's types and decoded JSON, with no client, so
// that every malformed value a person, a script or an older Rancher may write is covered by table
// tests and fuzzing. A value that cannot be used is a *problem.Problem with a reason and a message meant
// for a Kubernetes Event; nothing here panics or echoes a credential's data.
package harvester

// MaxQuoted bounds how much of a value read from Rancher's objects (a name, a reference, a
// display name) a message or a metric label repeats: enough to recognise it, never a wall of text
// in an Event.
const MaxQuoted = 80
