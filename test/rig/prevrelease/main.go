// Command prevrelease builds the operator as the previous release was
// (controlplane.PreviousRelease), once, into the cache the upgrade tests and the end-to-end suite
// read it from, and prints the binary's path. `make test` runs it in a phase of its own, before any
// go test starts, so that no test's time limit covers that compile; a test run without it builds
// the release itself.
package main

import (
	"fmt"
	"os"

	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

func main() {
	binary, err := controlplane.BuildRelease(controlplane.PreviousRelease)
	if err != nil {
		fmt.Fprintln(os.Stderr, "prevrelease:", err)
		os.Exit(1)
	}
	fmt.Println(binary)
}
