package bench

import (
	"os"
	"testing"

	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// shared is the package's control plane and operator build.
var shared *suite.Suite

func TestMain(m *testing.M) {
	os.Exit(suite.Run(m, func(s *suite.Suite) { shared = s }))
}
