// Package controlplane starts a real Kubernetes control plane (kube-apiserver and etcd built from
// the Go module proxy by scripts/build-controlplane) with the kubefip CRDs from the chart and
// Rancher's CRDs, for the tests and `make run`; builds and runs the operator, this commit's or a
// previous release's; and puts a recording, holding proxy in front of the API server.
package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
)

// Environment is a running control plane.
type Environment struct {
	// Config is an administrator's connection to the API server.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for the same administrator.
	Kubeconfig string
	// Audit is the API server's audit log, nil unless started by StartAudited; the guests'
	// API servers then keep one each too (Guest.Audit).
	Audit *AuditLog

	env    *envtest.Environment
	assets string
	dir    string

	mu     sync.Mutex
	guests []*Guest
}

// Start brings up etcd and kube-apiserver and installs the CRDs of the working tree's CRD chart
// and Rancher's. Stop it when done.
func Start() (*Environment, error) {
	return startFromChart(false)
}

// StartAudited is Start with the API servers' audit logs on (Environment.Audit, Guest.Audit), for
// the benchmarks to count requests by client from the API servers' own records.
func StartAudited() (*Environment, error) {
	return startFromChart(true)
}

func startFromChart(audit bool) (*Environment, error) {
	root, err := rig.RepoRoot()
	if err != nil {
		return nil, err
	}
	return start(audit, func(env *envtest.Environment) {
		env.CRDDirectoryPaths = []string{filepath.Join(root, "charts", "kube-fip-operator-crd", "templates")}
		env.ErrorIfCRDPathMissing = true
	})
}

// StartWithCRDs is Start with the given kubefip CRDs instead of the working tree's chart, and
// Rancher's CRDs as Start installs them: a control plane as a cluster running another release has
// it. Stop it when done.
func StartWithCRDs(crds []*apiextv1.CustomResourceDefinition) (*Environment, error) {
	return start(false, func(env *envtest.Environment) {
		for _, def := range crds {
			env.CRDs = append(env.CRDs, def.DeepCopy())
		}
	})
}

// start brings up a control plane with Rancher's CRDs and those crds adds, with an audit log when
// audit is set.
func start(audit bool, crds func(*envtest.Environment)) (*Environment, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	rancher, err := rancher.CRDs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kube-fip-controlplane-")
	if err != nil {
		return nil, err
	}

	// envtest logs through controller-runtime's logger; its messages are not the operator's.
	ctrllog.SetLogger(logr.Discard())

	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDs:                     rancher,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	crds(env)
	// The binaries are found through BinaryAssetsDirectory; KUBEBUILDER_ASSETS would win over it.
	env.ControlPlane.GetAPIServer().Path = filepath.Join(assets, "kube-apiserver")
	env.ControlPlane.Etcd = &envtest.Etcd{Path: filepath.Join(assets, "etcd")}
	var log *AuditLog
	if audit {
		if log, err = enableAudit(env.ControlPlane.GetAPIServer(), dir, "management"); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}

	cfg, err := env.Start()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting the test control plane: %w", err)
	}
	e := &Environment{Config: cfg, Audit: log, env: env, assets: assets, dir: dir}
	if e.Kubeconfig, err = writeKubeconfig(&env.ControlPlane, filepath.Join(dir, "kubeconfig")); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

// Stop stops every guest API server, then the control plane, and removes the temporary files.
func (e *Environment) Stop() error {
	e.mu.Lock()
	guests := e.guests
	e.guests = nil
	e.mu.Unlock()

	errs := make([]error, len(guests), len(guests)+2)
	var wg sync.WaitGroup
	for i, g := range guests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = g.Stop()
		}()
	}
	wg.Wait()
	errs = append(errs, e.env.Stop())
	errs = append(errs, os.RemoveAll(e.dir))
	return errors.Join(errs...)
}

// writeKubeconfig writes an administrator kubeconfig for the control plane's API server.
func writeKubeconfig(plane *envtest.ControlPlane, path string) (string, error) {
	user, err := plane.AddUser(envtest.User{Name: "kube-fip-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding the administrator user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("rendering the administrator kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}

// assetsEnv is the directory holding kube-apiserver and etcd, the variable envtest itself reads.
const assetsEnv = "KUBEBUILDER_ASSETS"

// AssetsDir returns the directory with the control-plane binaries: KUBEBUILDER_ASSETS when set,
// otherwise what scripts/build-controlplane reports, building the binaries on first use. The
// script's progress goes to stderr so that a long first build is visibly alive.
func AssetsDir() (string, error) {
	if dir := os.Getenv(assetsEnv); dir != "" {
		return dir, checkAssets(dir)
	}
	dir, err := rig.ScriptDir("build-controlplane")
	if err != nil {
		return "", err
	}
	return dir, checkAssets(dir)
}

func checkAssets(dir string) error {
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return fmt.Errorf("%s has no %s (run scripts/build-controlplane): %w", dir, bin, err)
		}
	}
	return nil
}
