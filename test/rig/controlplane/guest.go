package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// Guest is an extra API server standing in for a Rancher guest (downstream) cluster. It shares the
// environment's etcd under a prefix of its own, so it starts in seconds and costs one process.
type Guest struct {
	Name string
	// Config is an administrator's direct connection to the guest API server.
	Config *rest.Config
	// Audit is the guest API server's audit log when the environment keeps them, else nil.
	Audit *AuditLog

	plane    *envtest.ControlPlane
	stopOnce sync.Once
	stopErr  error
}

var guestName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// StartGuest starts a guest API server named name. The environment stops it in Stop.
func (e *Environment) StartGuest(name string) (*Guest, error) {
	return e.startGuest(name, "")
}

// StartGuestWithServiceCIDRs is StartGuest with the Service ranges cidrs (comma-separated, one per
// family, "10.0.0.0/24,fd00:10:96::/112" for a dual-stack guest): the kube-apiserver of the
// pinned version takes them only at start.
func (e *Environment) StartGuestWithServiceCIDRs(name, cidrs string) (*Guest, error) {
	return e.startGuest(name, cidrs)
}

// startGuest starts a guest API server, with the Service ranges cidrs when given.
func (e *Environment) startGuest(name, cidrs string) (*Guest, error) {
	if !guestName.MatchString(name) {
		return nil, fmt.Errorf("guest name %q must be a DNS label", name)
	}
	server := &envtest.APIServer{
		Path:    e.oneCore,
		EtcdURL: e.etcdURL,
		// As long as the management API server may take: four guests starting at once on two
		// cores beside a running suite can take longer than envtest's default of 20 s.
		StartTimeout: e.startTimeout,
	}
	server.Configure().Set("etcd-prefix", e.prefix+"guest-"+name)
	// RKE2 and K3s guests admit privileged pods: what a refused install would have let through
	// must be something the guest's API server accepts, or a test of it proves nothing.
	server.Configure().Set("allow-privileged", "true")
	// A guest's API server serves the operator's reads, paged lists without resourceVersion, which
	// the pinned 1.30 answers from etcd with or without a watch cache, and its watches of Services
	// and DaemonSets, which without the cache are etcd's own: they send no bookmarks, and a
	// resourceVersion etcd compacted away is answered 410 at once, as a real guest's cache answers
	// one older than it holds. The cache would mostly cost CPU while the guest waits (an idle API
	// server of the pinned version: about 0.8 s every 30 s with it, 0.25 s without).
	server.Configure().Set("watch-cache", "false")
	if cidrs != "" {
		server.Configure().Set("service-cluster-ip-range", cidrs)
	}
	var log *AuditLog
	if e.Audit != nil {
		var err error
		if log, err = enableAudit(server, e.dir, "guest-"+name); err != nil {
			return nil, err
		}
	}
	if err := server.Start(); err != nil {
		return nil, fmt.Errorf("starting guest API server %s: %w", name, err)
	}
	plane := &envtest.ControlPlane{APIServer: server}
	user, err := plane.AddUser(envtest.User{Name: "guest-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		_ = server.Stop()
		return nil, fmt.Errorf("adding the guest administrator: %w", err)
	}
	g := &Guest{Name: name, Config: user.Config(), Audit: log, plane: plane}
	e.mu.Lock()
	e.guests = append(e.guests, g)
	e.mu.Unlock()
	return g, nil
}

// Stop stops the guest API server and waits until it has exited, about a second. Later calls wait
// for the first and return its result.
func (g *Guest) Stop() error {
	g.stopOnce.Do(func() { g.stopErr = g.plane.APIServer.Stop() })
	return g.stopErr
}

// StopSoon starts stopping the guest API server and returns at once, for a test's clean-up: the
// next test need not wait for the shutdown, and the environment's Stop waits for it.
func (g *Guest) StopSoon() {
	go func() { _ = g.Stop() }()
}

// Kubeconfig renders an administrator kubeconfig of the guest API server itself, bypassing any
// proxy, for a person to look inside the guest.
func (g *Guest) Kubeconfig() ([]byte, error) {
	user, err := g.plane.AddUser(envtest.User{Name: "guest-viewer", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	return user.KubeConfig()
}

// HarvesterRelease is the release Rancher installs the Harvester cloud provider chart as, in
// kube-system of every Harvester guest cluster.
const HarvesterRelease = "harvester-cloud-provider"

// InstallHarvesterCloudProvider installs the Harvester cloud provider stand-in into the guest as
// Rancher does, with the Helm SDK: everything that chart and its kube-vip subchart leave behind,
// owned by release kube-system/harvester-cloud-provider.
func (g *Guest) InstallHarvesterCloudProvider() error {
	return g.InstallRelease(HarvesterRelease, chartrepo.HarvesterCloudProviderChart(), nil)
}

// InstallRelease installs ch with values into the guest's kube-system as release name, with the
// Helm SDK as a person or another tool does: hooks, Helm's own records and ownership annotations.
func (g *Guest) InstallRelease(name string, ch *chart.Chart, values map[string]interface{}) error {
	kubeconfig, err := g.Kubeconfig()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kube-fip-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return err
	}
	namespace := "kube-system"
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &path, &namespace
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, namespace, "secret", func(string, ...interface{}) {}); err != nil {
		return err
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = name, namespace
	install.Timeout = time.Minute
	if _, err := install.Run(ch, values); err != nil {
		return fmt.Errorf("installing release %s into guest %s: %w", name, g.Name, err)
	}
	return nil
}

// writeOneCore writes into dir a program that runs the kube-apiserver at path with GOMAXPROCS=1,
// and returns its path: what the guests' and the shards' API servers run. The tests start many
// API servers on two cores, where one on both cores mostly adds garbage-collector workers that
// contend with the others: a guest started, idle for 8 s and stopped costs 2.2-2.3 core-seconds
// on one core against 2.9 on two (five guests each way), and test/integration's guests and shards
// together took 481 core-seconds instead of 541.
func writeOneCore(dir, path string) (string, error) {
	out := filepath.Join(dir, "kube-apiserver-one-core")
	script := "#!/bin/sh\nGOMAXPROCS=1 exec " + shellQuote(path) + " \"$@\"\n"
	if err := os.WriteFile(out, []byte(script), 0o755); err != nil {
		return "", err
	}
	return out, nil
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
