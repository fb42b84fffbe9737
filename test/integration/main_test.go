package integration

import (
	"testing"

	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// shards are the package's control planes and operator build: each test takes one for itself.
var shards suite.Shards

func TestMain(m *testing.M) { shards.Main(m) }
