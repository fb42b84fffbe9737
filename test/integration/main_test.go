package integration

import (
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/kubefip/kube-fip-operator/pkg/testenv"
)

// suite is shared by every test in the package: one control plane and one operator build.
type suite struct {
	env      *testenv.Environment
	operator string
}

var shared suite

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "kube-fip-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)

	binary, err := testenv.BuildOperator(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err := testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}()
	shared = suite{env: env, operator: binary}
	return m.Run()
}

// freePort returns a loopback port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
