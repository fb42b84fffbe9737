package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// assetsEnv is the directory holding kube-apiserver and etcd, the variable envtest itself reads.
const assetsEnv = "KUBEBUILDER_ASSETS"

// RepoRoot finds the repository root from the working directory: tests run in their package
// directory, `make run` at the root, so walk up until the CRD chart is found.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "charts", "kube-fip-operator-crd")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root (a directory with charts/kube-fip-operator-crd) above the working directory")
		}
		dir = parent
	}
}

// AssetsDir returns the directory with the control-plane binaries: KUBEBUILDER_ASSETS when set,
// otherwise what scripts/build-controlplane reports, building the binaries on first use. The
// script's progress goes to stderr so that a long first build is visibly alive.
func AssetsDir() (string, error) {
	if dir := os.Getenv(assetsEnv); dir != "" {
		return dir, checkAssets(dir)
	}
	dir, err := scriptDir("build-controlplane")
	if err != nil {
		return "", err
	}
	return dir, checkAssets(dir)
}

// scriptDir runs scripts/<name>, which builds what it builds on first use and prints the directory
// holding it; the script's progress goes to stderr so that a long first build is visibly alive.
func scriptDir(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(root, "scripts", name))
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("scripts/%s: %w", name, err)
	}
	return strings.TrimSpace(out.String()), nil
}

func checkAssets(dir string) error {
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return fmt.Errorf("%s has no %s (run scripts/build-controlplane): %w", dir, bin, err)
		}
	}
	return nil
}
