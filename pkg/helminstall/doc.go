// Package helminstall installs into a guest cluster, with the Helm SDK, the charts the install
// policy approved: fetched from the allowed sources within bounds, Helm given the approved
// manifest and none of a chart's templates or schema, hooks and CRDs off, every write Helm makes guarded so that
// only the approved manifest reaches the guest, release records used only when their identity is
// consistent and trusted by digest, and nothing of the guest's API discovery read (Helm maps the
// charts' kinds with a fixed mapping). It works through a pkg/guest client.
package helminstall
