// Package version holds the build's version, set with -ldflags -X by scripts/build.
package version

// Version and GitCommit are overwritten at link time; they are variables only for that reason.
var (
	Version   = "dev"
	GitCommit = "HEAD"
)
