// Package externaldns gives the tests external-dns's own DNSEndpoint CRD, read from the
// external-dns module of Version as the Go module proxy serves it (the contract pkg/dnsname
// mirrors, with no copy in this repository), the real external-dns of Version, and a real DNS
// server for it to write to.
package externaldns

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Version is the external-dns release whose contract pkg/dnsname mirrors.
const Version = "v0.22.0"

// Module is external-dns's Go module.
const Module = "sigs.k8s.io/external-dns"

// CRDFile is where the module of Version holds the DNSEndpoint CRD.
const CRDFile = "config/crd/standard/dnsendpoints.externaldns.k8s.io.yaml"

// Dir downloads the module of Version (once: the module cache keeps it) and returns its directory.
func Dir() (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", Module+"@"+Version)
	cmd.Dir = os.TempDir() // outside this module: nothing of its go.mod is read or changed
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("downloading %s@%s: %w", Module, Version, err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("downloading %s@%s: %v %s", Module, Version, err, mod.Error)
	}
	return mod.Dir, nil
}

// InstallCRD installs the DNSEndpoint CRD of Version into the API server cfg reaches, and waits
// until it is served.
func InstallCRD(cfg *rest.Config) error {
	dir, err := Dir()
	if err != nil {
		return err
	}
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{filepath.Join(dir, CRDFile)}, ErrorIfPathMissing: true})
	return err
}
