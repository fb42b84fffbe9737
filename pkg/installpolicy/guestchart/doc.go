// Package guestchart names the two charts the operator installs into guest clusters, and the
// Refusal every part of the install policy returns when it does not allow something: its reason
// (an Event reason and the KubevipInstalled condition's), the kube-fip-config key it comes from,
// and a message that repeats nothing of a value as written.
package guestchart
