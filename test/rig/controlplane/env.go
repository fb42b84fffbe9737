// Package controlplane starts a real Kubernetes control plane (kube-apiserver and etcd built from
// the Go module proxy by scripts/build-controlplane) with the kubefip CRDs from the chart and
// Rancher's CRDs, for the tests and `make run`; builds and runs the operator, this commit's or a
// previous release's; and puts a recording, holding proxy in front of the API server.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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

	assets string
	// oneCore is the path of a program that runs the kube-apiserver of assets on one core
	// (GOMAXPROCS=1), for the guests' and the shards' API servers (writeOneCore).
	oneCore      string
	dir          string
	etcdURL      *url.URL
	startTimeout time.Duration
	// prefix begins the etcd prefixes of the guests' API servers: a shard's guests are kept apart
	// from another shard's guests of the same name.
	prefix string
	// installCRDs installs the environment's CRDs into the API server of cfg: a shard gets them too.
	installCRDs func(cfg *rest.Config) error
	stop        func() error

	mu     sync.Mutex
	guests []*Guest
	shards []*Environment
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
	rancherCRDs, err := rancher.CRDs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kube-fip-controlplane-")
	if err != nil {
		return nil, err
	}

	oneCore, err := writeOneCore(dir, filepath.Join(assets, "kube-apiserver"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}

	// envtest logs through controller-runtime's logger; its messages are not the operator's.
	ctrllog.SetLogger(logr.Discard())

	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDs:                     rancherCRDs,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	crds(env)
	// A shard's API server gets the same CRDs, as new objects: installing one fills in its
	// server-side fields.
	installCRDs := func(cfg *rest.Config) error {
		rancherCRDs, err := rancher.CRDs()
		if err != nil {
			return err
		}
		spec := &envtest.Environment{CRDs: rancherCRDs}
		crds(spec)
		_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
			CRDs: spec.CRDs, Paths: spec.CRDDirectoryPaths, ErrorIfPathMissing: spec.ErrorIfCRDPathMissing,
		})
		return err
	}
	// The binaries are found through BinaryAssetsDirectory; KUBEBUILDER_ASSETS would win over it.
	env.ControlPlane.GetAPIServer().Path = filepath.Join(assets, "kube-apiserver")
	env.ControlPlane.Etcd = &envtest.Etcd{Path: filepath.Join(assets, "etcd")}
	// Its data is thrown away with the environment: writes need not wait for the disk.
	env.ControlPlane.Etcd.Configure().Set("unsafe-no-fsync", "true")
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
	e := &Environment{Config: cfg, Audit: log, assets: assets, oneCore: oneCore, dir: dir, etcdURL: env.ControlPlane.Etcd.URL,
		startTimeout: env.ControlPlaneStartTimeout, prefix: "/", installCRDs: installCRDs, stop: env.Stop}
	if e.Kubeconfig, err = writeKubeconfig(&env.ControlPlane, filepath.Join(dir, "kubeconfig")); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

// StartShard starts another API server on the environment's etcd, under an etcd prefix of its own,
// with the environment's CRDs: a control plane of its own in all but the etcd process, on which
// none of the environment's objects, nor another shard's, cluster-scoped ones included, are seen.
// The environment stops it in Stop, before its own API server.
func (e *Environment) StartShard(name string) (*Environment, error) {
	if !guestName.MatchString(name) {
		return nil, fmt.Errorf("shard name %q must be a DNS label", name)
	}
	dir, err := os.MkdirTemp("", "kube-fip-shard-")
	if err != nil {
		return nil, err
	}
	server := &envtest.APIServer{
		Path:         e.oneCore,
		EtcdURL:      e.etcdURL,
		StartTimeout: e.startTimeout,
	}
	server.Configure().Set("etcd-prefix", "/shard-"+name)
	var log *AuditLog
	if e.Audit != nil {
		if log, err = enableAudit(server, dir, "shard-"+name); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := server.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting the API server of shard %s: %w", name, err)
	}
	s := &Environment{Audit: log, assets: e.assets, oneCore: e.oneCore, dir: dir, etcdURL: e.etcdURL, startTimeout: e.startTimeout,
		prefix: "/shard-" + name + "-", installCRDs: e.installCRDs, stop: server.Stop}
	plane := &envtest.ControlPlane{APIServer: server}
	fail := func(err error) (*Environment, error) {
		_ = s.Stop()
		return nil, fmt.Errorf("shard %s: %w", name, err)
	}
	admin, err := plane.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, &rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		return fail(err)
	}
	s.Config = admin.Config()
	if s.Kubeconfig, err = writeKubeconfig(plane, filepath.Join(dir, "kubeconfig")); err != nil {
		return fail(err)
	}
	if err := waitForDefaultNamespace(s.Config); err != nil {
		return fail(err)
	}
	if err := e.installCRDs(s.Config); err != nil {
		return fail(fmt.Errorf("installing the CRDs: %w", err))
	}
	e.mu.Lock()
	e.shards = append(e.shards, s)
	e.mu.Unlock()
	return s, nil
}

// waitForDefaultNamespace waits until the API server of cfg serves the namespace default, which a
// new API server creates soon after it starts answering.
func waitForDefaultNamespace(cfg *rest.Config) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return rig.Until(30*time.Second, "the namespace default", nil, func() (bool, error) {
		_, err := kube.CoreV1().Namespaces().Get(context.Background(), metav1.NamespaceDefault, metav1.GetOptions{})
		return err == nil, err
	})
}

// Stop stops every shard and guest API server, then the control plane, and removes the temporary
// files.
func (e *Environment) Stop() error {
	e.mu.Lock()
	guests, shards := e.guests, e.shards
	e.guests, e.shards = nil, nil
	e.mu.Unlock()

	stoppers := make([]func() error, 0, len(guests)+len(shards))
	for _, g := range guests {
		stoppers = append(stoppers, g.Stop)
	}
	for _, s := range shards {
		stoppers = append(stoppers, s.Stop)
	}
	errs := make([]error, len(stoppers), len(stoppers)+2)
	var wg sync.WaitGroup
	for i, stop := range stoppers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = stop()
		}()
	}
	wg.Wait()
	errs = append(errs, e.stop())
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
	dir, err := rig.BuiltDir(assetsEnv, "build-controlplane")
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
