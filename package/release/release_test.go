package release

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"helm.sh/helm/v3/pkg/chart"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/registry"
)

// standIns is the rig's world a release is checked against: the stand-in guest charts in a chart
// repository and the pinned images in a registry, both on loopback, and a pins file holding the
// product's chart versions, URLs and image names with the stand-ins' own digests.
type standIns struct {
	repo     *chartrepo.ChartRepo
	registry *registry.Registry
	pins     Pins
	pinsFile string
	archives map[string][]byte
}

func startStandIns(t *testing.T) *standIns {
	t.Helper()
	charts := []*chart.Chart{chartrepo.KubevipChart(config.DefaultKubevipChartVersion),
		chartrepo.KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion)}
	s := &standIns{repo: chartrepo.ChartRepoForTest(t, charts...), archives: map[string][]byte{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.registry = registry.Start(l)
	t.Cleanup(func() { _ = s.registry.Close() })

	for i, c := range charts {
		data, err := chartrepo.Archive(c)
		if err != nil {
			t.Fatal(err)
		}
		pc := chartarchive.PinnedCharts()[i]
		pc.Digest = guestchart.Digest(data)
		s.pins.Charts = append(s.pins.Charts, pc)
		s.archives[pc.File()] = data
	}
	for _, pinned := range ProductPins().Images {
		tag, _, err := parsePinnedImage(pinned)
		if err != nil {
			t.Fatal(err)
		}
		digest := s.pushIndex(t, tag)
		s.pins.Images = append(s.pins.Images, tag.String()+"@"+digest.String())
	}
	data, err := json.Marshal(s.pins)
	if err != nil {
		t.Fatal(err)
	}
	s.pinsFile = filepath.Join(t.TempDir(), "pins.json")
	if err := os.WriteFile(s.pinsFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// pushIndex writes a new multi-platform index under tag's repository path and tag into the
// registry, as a mirror holds the pinned image, and returns its digest.
func (s *standIns) pushIndex(t *testing.T, tag name.Tag) v1.Hash {
	t.Helper()
	idx, err := random.Index(256, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(s.registry.Host + "/" + tag.RepositoryStr() + ":" + tag.TagStr())
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// runRelease runs scripts/release (make release) as a build that is not a release, for this
// machine's architecture, with the stand-ins as its sources and its output in out; env adds to or
// overrides its environment. It returns the combined output and the error.
func (s *standIns) runRelease(t *testing.T, out string, env ...string) (string, error) {
	t.Helper()
	root, err := rig.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "release"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "NOT_A_RELEASE=1", "PUSH=", "PINS="+s.pinsFile, "CHART_BASE_URL="+s.repo.URL,
		"IMAGE_REGISTRY="+s.registry.Host, "GUEST_CHARTS_DIR=", "ARCHS="+runtime.GOARCH,
		"BIN="+filepath.Join(out, "bin"), "DIST="+filepath.Join(out, "dist"))
	cmd.Env = append(cmd.Env, env...)
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// TestReleaseShipsTheCharts runs the release command against the rig's stand-in charts and
// registry under their own digests: every platform's image of the layout it writes holds each
// archive byte for byte where the operator reads it; the chart repository is written, the output is
// marked as no release, and the layout pushes to a registry as PUSH=1 pushes it.
func TestReleaseShipsTheCharts(t *testing.T) {
	s := startStandIns(t)
	out := t.TempDir()
	log, err := s.runRelease(t, out)
	if err != nil {
		t.Fatalf("scripts/release: %v\n%s", err, log)
	}
	dist := filepath.Join(out, "dist")
	root, err := layout.ImageIndexFromPath(filepath.Join(dist, "image"))
	if err != nil {
		t.Fatal(err)
	}
	rm, err := root.IndexManifest()
	if err != nil || len(rm.Manifests) != 1 {
		t.Fatalf("the layout's index.json: %v, %v; want one index", rm, err)
	}
	idx, err := root.ImageIndex(rm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Platform == nil || im.Manifests[0].Platform.Architecture != runtime.GOARCH {
		t.Fatalf("the index holds %d images; want one for linux/%s", len(im.Manifests), runtime.GOARCH)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	files := imageFiles(t, img)
	for file, data := range s.archives {
		p := strings.TrimPrefix(chartarchive.DefaultGuestChartsDir, "/") + "/" + file
		if got, ok := files[p]; !ok || !bytes.Equal(got, data) {
			t.Errorf("the image's /%s: present %t, %d bytes; want the stand-in archive's %d bytes", p, ok, len(got), len(data))
		}
	}
	if _, err := os.Stat(filepath.Join(dist, "artifacts", "index.yaml")); err != nil {
		t.Errorf("the chart repository: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dist, "NOT-A-RELEASE")); err != nil {
		t.Errorf("the output of a build with other pins is not marked: %v", err)
	}

	pushed, err := Push(context.Background(), filepath.Join(dist, "image"), s.registry.Host+"/kubefip/kube-fip-operator:test")
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.NewTag(s.registry.Host + "/kubefip/kube-fip-operator:test")
	desc, err := remote.Head(ref)
	if err != nil || desc.Digest.String() != pushed || pushed != rm.Manifests[0].Digest.String() {
		t.Errorf("pushed %s: the registry answers %v (%v); want the layout's index %s", pushed, desc, err, rm.Manifests[0].Digest)
	}
}

// imageFiles is every regular file of img's filesystem, by path without the leading slash.
func imageFiles(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	all, err := rig.ImageFiles(img)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for p, f := range all {
		if f.Header.Typeflag == tar.TypeReg {
			files[p] = f.Data
		}
	}
	return files
}

// TestReleaseRefusesAnotherArchive: an archive whose digest is not the pinned one stops the release
// before anything is built, and the refusal names the file, its digest and the pinned one.
func TestReleaseRefusesAnotherArchive(t *testing.T) {
	s := startStandIns(t)
	dir := t.TempDir()
	for file, data := range s.archives {
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	other := chartrepo.KubevipChart(config.DefaultKubevipChartVersion)
	other.Metadata.Description = "another archive of the same version"
	data, err := chartrepo.Archive(other)
	if err != nil {
		t.Fatal(err)
	}
	pc := s.pins.Charts[0]
	if err := os.WriteFile(filepath.Join(dir, pc.File()), data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	log, err := s.runRelease(t, out, "GUEST_CHARTS_DIR="+dir)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("scripts/release with another archive: %v; want it to fail\n%s", err, log)
	}
	for _, want := range []string{pc.File(), "has digest " + guestchart.Digest(data), "not the pinned " + pc.Digest} {
		if !strings.Contains(log, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, log)
		}
	}
	assertNothingBuilt(t, out)
}

// TestReleaseRefusesAMovedImage: a pinned image whose registry answers another digest for its tag
// stops the release before anything is built, and the refusal names the image, the registry's
// digest and the pinned one.
func TestReleaseRefusesAMovedImage(t *testing.T) {
	s := startStandIns(t)
	pinned := s.pins.Images[1]
	tag, want, err := parsePinnedImage(pinned)
	if err != nil {
		t.Fatal(err)
	}
	moved := s.pushIndex(t, tag)
	out := t.TempDir()
	log, err := s.runRelease(t, out)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("scripts/release with a moved tag: %v; want it to fail\n%s", err, log)
	}
	for _, w := range []string{"image " + pinned, "answers digest " + moved.String(), "not the pinned " + want} {
		if !strings.Contains(log, w) {
			t.Errorf("the refusal does not say %q:\n%s", w, log)
		}
	}
	if strings.Contains(log, "image "+s.pins.Images[0]+":") {
		t.Errorf("the refusal names the image whose digest matches:\n%s", log)
	}
	assertNothingBuilt(t, out)
}

// TestReleaseRefusesTestPins: other pins are taken only by a build marked as no release, and such
// a build is never pushed.
func TestReleaseRefusesTestPins(t *testing.T) {
	s := startStandIns(t)
	for name, tc := range map[string]struct {
		env  []string
		says string
	}{
		"pins without NOT_A_RELEASE": {[]string{"NOT_A_RELEASE="}, "only a build that is not a release takes it"},
		"NOT_A_RELEASE with PUSH":    {[]string{"PUSH=1"}, "it is never pushed"},
	} {
		out := t.TempDir()
		log, err := s.runRelease(t, out, tc.env...)
		if err == nil || !strings.Contains(log, tc.says) {
			t.Errorf("%s: %v; want a refusal saying %q\n%s", name, err, tc.says, log)
		}
		assertNothingBuilt(t, out)
	}
}

func assertNothingBuilt(t *testing.T, out string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(out, "dist")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused release wrote %s/dist (%v)", out, err)
	}
}
