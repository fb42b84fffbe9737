package rig

import (
	"fmt"
	"os"
	"os/exec"
)

// GoBuild builds package pkg of the module in dir into out as scripts/build builds the release:
// static (CGO_ENABLED=0), trimmed, linked with ldflags. env adds to the environment (GOARCH,
// GOWORK). Under make test the compiler flags it exports apply too, so the packages come from the
// Go build cache the tests filled.
func GoBuild(dir, pkg, out, ldflags string, env ...string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s in %s: %w\n%s", pkg, dir, err, output)
	}
	return nil
}
