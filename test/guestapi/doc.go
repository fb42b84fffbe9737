// Package guestapi tests pkg/guest, pkg/kubevipconfig and pkg/helminstall against a real guest
// API server behind the test cluster proxy: the ConfigMap writes, the Helm installs from a chart repository and an OCI registry,
// pending-release recovery, and the ownership of releases and records the operator did not make.
package guestapi
