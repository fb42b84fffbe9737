package leastprivilege

import (
	"testing"

	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// shared is the package's control plane and operator build.
var shared suite.Shared

func TestMain(m *testing.M) {
	suite.Parallel(1000)
	shared.MainAudited(m)
}
