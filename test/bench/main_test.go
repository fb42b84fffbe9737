package bench

import (
	"flag"
	"os"
	"testing"

	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// shared is the package's control plane and operator build.
var shared suite.Shared

// TestMain starts the control plane only when benchmarks run (-test.bench): the package has no
// tests, and go test ./... runs it without benchmarks.
func TestMain(m *testing.M) {
	flag.Parse()
	if flag.Lookup("test.bench").Value.String() == "" {
		os.Exit(m.Run())
	}
	shared.MainAudited(m)
}
