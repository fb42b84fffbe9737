package rig

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

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

// ScriptDir runs scripts/<name>, which builds what it builds on first use and prints the directory
// holding it; the script's progress goes to stderr so that a long first build is visibly alive.
func ScriptDir(name string) (string, error) {
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

// BuiltDir is the directory the environment variable env names, which `make test` sets to what it
// built, or else what scripts/<script> prints, building it on first use (see ScriptDir).
func BuiltDir(env, script string) (string, error) {
	if dir := os.Getenv(env); dir != "" {
		return dir, nil
	}
	return ScriptDir(script)
}
