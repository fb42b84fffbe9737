package e2e

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1image "github.com/google/go-containerregistry/pkg/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"k8s.io/client-go/kubernetes"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/dataplane"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
	"github.com/kubefip/kube-fip-operator/test/rig/harvester"
	"github.com/kubefip/kube-fip-operator/test/rig/node"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/registry"
)

// The suite's two clusters, by index (their addresses: see test/rig/node).
const (
	mgmtIndex  = 11
	guestIndex = 12
	// operatorNS is where Rancher's Apps & Marketplace installs the chart.
	operatorNS = "kube-fip"
	// guestName and guestID are the guest cluster in Rancher's terms.
	guestName = "e2e-guest"
	guestID   = "c-m-e2eguest"
)

// suite is what every test of the package works on, set up once by TestMain.
type suite struct {
	// skip says why the suite cannot run on this machine; err why setting it up failed.
	skip string
	err  error

	mgmt, guest *node.Cluster
	mgmtKube    kubernetes.Interface
	guestKube   kubernetes.Interface
	fips        kubefipcontrollers.Interface
	proxy       *guests.ClusterProxy
	world       *rancher.World
	repo        *chartrepo.ChartRepo
	// crdChart and operatorChart are the archives make package-helm wrote.
	crdChart, operatorChart string
	// operatorImage is the image the operator chart renders, under the registry; previousImage
	// the previous release's.
	operatorImage, previousImage string
	// traefikImage is the image of the real Traefik, as a guest's pods name it.
	traefikImage string
	// upgraded says the releases are this build's.
	upgraded bool
	// images are every image built for the clusters, by the repository:tag the registry serves
	// it under; registry is where the nodes pull them from.
	images   map[string]v1image.Image
	registry *registry.Registry
	dir      string
	// hv is the Harvester cluster the guest's ranges name, once a test started it (its API server
	// hvPlane).
	hv      *harvester.Cluster
	hvPlane *controlplane.Environment
}

var e2e suite

func TestMain(m *testing.M) {
	flag.Parse()
	code := func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
		defer cancel()
		restore := node.SaveSysctls()
		defer restore()
		defer e2e.stop()
		if e2e.skip = cannotRun(); e2e.skip == "" {
			e2e.err = e2e.start(ctx)
			if e2e.err != nil {
				fmt.Fprintf(os.Stderr, "e2e: setting up the clusters failed: %v\n", e2e.err)
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

// cannotRun says why this machine cannot run real clusters, or "".
func cannotRun() string {
	if os.Geteuid() != 0 {
		return "the end-to-end suite needs root (network namespaces, mounts, containers)"
	}
	if testing.Short() {
		return "the end-to-end suite does not run with -short"
	}
	return ""
}

// need skips or fails t unless the suite is up.
func need(t *testing.T) *suite {
	t.Helper()
	switch {
	case e2e.skip != "":
		t.Skip(e2e.skip)
	case e2e.err != nil:
		t.Fatalf("the clusters are not up: %v", e2e.err)
	}
	began := time.Now()
	t.Cleanup(func() {
		e2e.diagnose(t)
		fmt.Fprintf(os.Stderr, "e2e: %s took %s\n", t.Name(), time.Since(began).Round(100*time.Millisecond))
	})
	return &e2e
}

// current is need, with the operator upgraded to this build's charts and image first, if no test
// did it yet.
func current(t *testing.T) *suite {
	t.Helper()
	s := need(t)
	if !s.upgraded {
		rig.Must(t, s.upgradeToThisRelease(context.Background()))
		s.upgraded = true
	}
	return s
}

// step runs one part of the set-up, printing how long it took.
func step(what string, fn func() error) error {
	start := time.Now()
	err := fn()
	fmt.Fprintf(os.Stderr, "e2e: %s took %s\n", what, time.Since(start).Round(100*time.Millisecond))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (s *suite) start(ctx context.Context) error {
	var err error
	if s.dir, err = os.MkdirTemp("", "kube-fip-e2e-"); err != nil {
		return err
	}
	s.images = map[string]v1image.Image{}
	if err := step("the node components (cached after the first build)", func() error {
		if err := node.HostTools(); err != nil {
			return err
		}
		dir, err := rig.BuiltDir(node.NodeEnv, "build-node")
		if err != nil {
			return err
		}
		return os.Setenv(node.NodeEnv, dir)
	}); err != nil {
		return err
	}
	if err := step("the images and charts (make package, make package-helm)", s.buildImages); err != nil {
		return err
	}
	if err := step("both clusters, side by side", func() error { return s.startClusters(ctx) }); err != nil {
		return err
	}
	if err := step("the registry, every image pushed", s.startRegistry); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "e2e: cluster %s started in %s, cluster %s in %s\n", s.mgmt.Name, s.mgmt.Started.Round(100*time.Millisecond),
		s.guest.Name, s.guest.Started.Round(100*time.Millisecond))
	if err := step("Rancher's objects, the cluster proxy and the guest chart repository", s.startRancher); err != nil {
		return err
	}
	return step("the CRD chart and the operator chart (Helm SDK)", func() error { return s.installCharts(ctx) })
}

// buildImages builds what the clusters run: the operator's image and charts as the build writes
// them, and kube-vip, kube-vip-cloud-provider, the sandbox, the echo backend and Traefik.
func (s *suite) buildImages() error {
	root, err := rig.RepoRoot()
	if err != nil {
		return err
	}
	// make test packages the tree in a phase of its own before the tests (KUBE_FIP_PACKAGED); run
	// alone, the suite packages it for this machine's architecture.
	if os.Getenv("KUBE_FIP_PACKAGED") != root {
		for _, script := range []string{"package", "package-helm"} {
			cmd := exec.Command(filepath.Join(root, "scripts", script))
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "ARCHS="+goarch())
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("scripts/%s: %w\n%s", script, err, out)
			}
		}
	}
	artifacts := filepath.Join(root, "dist", "artifacts")
	for _, pattern := range []struct {
		glob string
		into *string
	}{{"kube-fip-operator-crd-*.tgz", &s.crdChart}, {"kube-fip-operator-[0-9]*.tgz", &s.operatorChart}} {
		found, _ := filepath.Glob(filepath.Join(artifacts, pattern.glob))
		if len(found) != 1 {
			return fmt.Errorf("make package-helm wrote %d archives %s", len(found), pattern.glob)
		}
		*pattern.into = found[0]
	}
	ch, err := loader.Load(s.operatorChart)
	if err != nil {
		return err
	}
	repo, _ := ch.Values["image"].(map[string]interface{})["repository"].(string)
	s.operatorImage = registryHost + "/" + repo + ":" + ch.Metadata.AppVersion
	if s.images[repo+":"+ch.Metadata.AppVersion], err = node.LayoutImage(filepath.Join(root, "dist", "image")); err != nil {
		return err
	}
	// The previous release's image: its binary, built from this repository's history, where the
	// image the chart names runs it.
	previous, err := controlplane.BuildRelease(controlplane.PreviousRelease)
	if err != nil {
		return err
	}
	s.previousImage = registryHost + "/" + repo + ":" + previousTag
	programs := []node.Image{{Ref: repo + ":" + previousTag, Binary: previous, Path: "/usr/bin/kube-fip-operator", User: "65532:65532"}}
	dp, err := dataplane.BuildDataplane()
	if err != nil {
		return err
	}
	pause, err := node.BuildPause(s.dir)
	if err != nil {
		return err
	}
	echo, err := node.BuildEcho(s.dir)
	if err != nil {
		return err
	}
	traefik, err := node.BuildTraefik()
	if err != nil {
		return err
	}
	s.traefikImage = traefik.Ref
	// The upstream images, under the paths a mirror of them has: kube-vip's runs /kube-vip (the
	// chart gives it the argument "manager"), the provider's /kube-vip-cloud-provider (which the
	// chart runs as its command).
	programs = append(programs, pause, echo, traefik,
		node.Image{Ref: registry.MirrorPath(config.DefaultKubevipImageRepository) + ":" + kubevipTag, Binary: dp.Kubevip(), Path: "/kube-vip"},
		node.Image{Ref: registry.MirrorPath(config.DefaultKubevipCloudProviderImageRepository) + ":" + providerTag, Binary: dp.Provider(), Path: "/kube-vip-cloud-provider"})
	for _, p := range programs {
		img, err := p.Build()
		if err != nil {
			return err
		}
		s.images[registry.MirrorPath(p.Ref)] = img
	}
	return nil
}

// registryHost is the registry the nodes pull from: on the management cluster's host address,
// which both nodes reach (see test/rig/node), at a port of the test's.
var registryHost = fmt.Sprintf("198.18.%d.1:5000", mgmtIndex)

// The tags of the pinned pair, as the registry serves them: the pinned digests are upstream's,
// which the images built here do not have, so kube-fip-config pins these builds' digests
// (kubevipValues), as an administrator pins an image they reviewed.
var kubevipTag, providerTag = tagOf(config.DefaultKubevipImageTag), tagOf(config.DefaultKubevipCloudProviderImageTag)

func tagOf(pinned string) string {
	tag, _, _ := strings.Cut(pinned, "@")
	return tag
}

// startRegistry serves the registry on the management cluster's host address and pushes every
// image into it.
func (s *suite) startRegistry() error {
	l, err := net.Listen("tcp", registryHost)
	if err != nil {
		return err
	}
	s.registry = registry.Start(l)
	for ref, img := range s.images {
		repository, tag, _ := strings.Cut(ref, ":")
		if _, err := s.registry.Push(repository, tag, img); err != nil {
			return err
		}
	}
	return nil
}

// digestOf is the digest of the image the registry serves as ref.
func (s *suite) digestOf(ref string) string {
	d, err := s.images[ref].Digest()
	if err != nil {
		panic(err)
	}
	return d.String()
}

func goarch() string {
	out, err := exec.Command("go", "env", "GOARCH").Output()
	if err != nil {
		return "amd64"
	}
	return strings.TrimSpace(string(out))
}

func (s *suite) stop() {
	if s.registry != nil {
		_ = s.registry.Close()
	}
	if s.repo != nil {
		_ = s.repo.Close()
	}
	if s.proxy != nil {
		_ = s.proxy.Close()
	}
	if s.hvPlane != nil {
		_ = s.hvPlane.Stop()
	}
	for _, c := range []*node.Cluster{s.guest, s.mgmt} {
		if c != nil {
			c.Stop()
		}
	}
	if s.dir != "" && os.Getenv("KUBE_FIP_KEEP") == "" {
		_ = os.RemoveAll(s.dir)
	}
}
