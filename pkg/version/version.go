// Package version holds the build's version, set with -ldflags -X by scripts/build.
package version

// Version and GitCommit are overwritten at link time; they are variables only for that reason.
var (
	Version   = "dev"
	GitCommit = "HEAD"
)

// UserAgent is the operator's user agent towards every API server, the management cluster's and
// the guests': what their audit logs and metrics name it by.
func UserAgent() string { return "kube-fip-operator/" + Version }
