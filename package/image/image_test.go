package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"helm.sh/helm/v3/pkg/chart"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

const (
	testVersion  = "v9.8.7-imagetest"
	testRevision = "abc1234"
)

// releaseArchs are the architectures whose real binaries the image tests read: those make test
// packaged (KUBE_FIP_PACKAGED_ARCHS; it builds this machine's only, as scripts/ci's make package
// builds both), or, run alone, both of the release's.
func releaseArchs() []string {
	if os.Getenv("KUBE_FIP_PACKAGED") != "" {
		return strings.Fields(os.Getenv("KUBE_FIP_PACKAGED_ARCHS"))
	}
	return []string{"amd64", "arm64"}
}

// operatorBinaries are the real operator for archs, as scripts/build builds it (static, trimmed,
// version linked in), in binDir, and the version and revision linked in. make test builds them in
// a phase of its own before any test runs (KUBE_FIP_PACKAGED names the tree whose bin/ holds them,
// KUBE_FIP_PACKAGED_VERSION and KUBE_FIP_PACKAGED_REVISION what they were stamped with); the test
// run alone cross-compiles them here.
func operatorBinaries(t *testing.T, binDir string, archs []string) (version, revision string) {
	t.Helper()
	if tree := os.Getenv("KUBE_FIP_PACKAGED"); tree != "" {
		version, revision = os.Getenv("KUBE_FIP_PACKAGED_VERSION"), os.Getenv("KUBE_FIP_PACKAGED_REVISION")
		if version == "" || revision == "" {
			t.Fatal("KUBE_FIP_PACKAGED is set without KUBE_FIP_PACKAGED_VERSION and KUBE_FIP_PACKAGED_REVISION")
		}
		for _, arch := range archs {
			data, err := os.ReadFile(BinaryPath(filepath.Join(tree, "bin"), arch))
			if err != nil {
				t.Fatalf("the operator make test built for linux/%s: %v", arch, err)
			}
			if err := os.MkdirAll(filepath.Dir(BinaryPath(binDir, arch)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(BinaryPath(binDir, arch), data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return version, revision
	}
	buildOperator(t, binDir, archs)
	return testVersion, testRevision
}

// buildOperator cross-compiles the real operator as scripts/build does (static, trimmed, version
// linked in) into binDir; both architectures share the Go build cache with scripts/package.
func buildOperator(t *testing.T, binDir string, archs []string) {
	t.Helper()
	ldflags := "-s -w -X github.com/kubefip/kube-fip-operator/pkg/version.Version=" + testVersion +
		" -X github.com/kubefip/kube-fip-operator/pkg/version.GitCommit=" + testRevision
	for _, arch := range archs {
		if err := rig.GoBuild(filepath.Join("..", ".."), ".", BinaryPath(binDir, arch), ldflags, "GOOS=linux", "GOARCH="+arch); err != nil {
			t.Fatalf("the operator for linux/%s: %v", arch, err)
		}
	}
}

// file is one regular file or directory of a flattened image.
type file = rig.ImageFile

func flatten(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	files, err := rig.ImageFiles(img)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestWriteLayoutReadBack writes the layout as scripts/package does, then reads it back as a
// registry client would: the index, each platform's config and filesystem, and runs the amd64
// binary out of its layer.
func TestWriteLayoutReadBack(t *testing.T) {
	archs := releaseArchs()
	if len(archs) == 0 {
		t.Fatal("KUBE_FIP_PACKAGED is set without KUBE_FIP_PACKAGED_ARCHS")
	}
	binDir := t.TempDir()
	version, revision := operatorBinaries(t, binDir, archs)
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	opts := Options{Version: version, Revision: revision, Created: created, Tag: version, BinDir: binDir, Architectures: archs}

	dir := filepath.Join(t.TempDir(), "image")
	digest, err := WriteLayout(dir, opts)
	if err != nil {
		t.Fatal(err)
	}

	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	rootManifest, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(rootManifest.Manifests) != 1 || rootManifest.Manifests[0].Digest != digest || !rootManifest.Manifests[0].MediaType.IsIndex() {
		t.Fatalf("index.json = %+v; want one image index %s", rootManifest.Manifests, digest)
	}
	if got := rootManifest.Manifests[0].Annotations[RefNameAnnotation]; got != version {
		t.Errorf("ref name = %q; want %q", got, version)
	}

	idx, err := root.ImageIndex(digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.source":   "https://github.com/kubefip/kube-fip-operator",
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.created":  "2026-03-01T12:00:00Z",
	}
	for k, v := range wantLabels {
		if im.Annotations[k] != v {
			t.Errorf("index annotation %s = %q; want %q", k, im.Annotations[k], v)
		}
	}

	var platforms []string
	for _, desc := range im.Manifests {
		if desc.Platform == nil {
			t.Fatalf("manifest %s has no platform", desc.Digest)
		}
		platforms = append(platforms, desc.Platform.String())
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(desc.Platform.String(), func(t *testing.T) {
			checkImage(t, img, *desc.Platform, wantLabels, created, version+" ("+revision+")")
		})
	}
	slices.Sort(platforms)
	var want []string
	for _, arch := range archs {
		want = append(want, Platform(arch).String())
	}
	slices.Sort(want)
	if !slices.Equal(platforms, want) {
		t.Errorf("index platforms = %v; want %v", platforms, want)
	}

	// The same inputs give the same bytes: nothing in the image depends on when it was built.
	again, err := Index(opts)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := again.Digest(); err != nil || d != digest {
		t.Errorf("second assembly digest = %v (%v); want %v", d, err, digest)
	}
}

func checkImage(t *testing.T, img v1.Image, platform v1.Platform, wantLabels map[string]string, created time.Time, wantVersion string) {
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != platform.Architecture || cf.Variant != platform.Variant {
		t.Errorf("config platform = %s/%s/%s; want %s", cf.OS, cf.Architecture, cf.Variant, platform.String())
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user = %q; want 65532:65532", cf.Config.User)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/usr/bin/kube-fip-operator"}) {
		t.Errorf("entrypoint = %q", cf.Config.Entrypoint)
	}
	if !cf.Created.Time.Equal(created) {
		t.Errorf("created = %v; want %v", cf.Created.Time, created)
	}
	for k, v := range wantLabels {
		if cf.Config.Labels[k] != v {
			t.Errorf("label %s = %q; want %q", k, cf.Config.Labels[k], v)
		}
	}

	files := flatten(t, img)
	checkBase(t, files)

	bin, ok := files[strings.TrimPrefix(cf.Config.Entrypoint[0], "/")]
	if !ok {
		t.Fatalf("no file at the entrypoint %s", cf.Config.Entrypoint[0])
	}
	if bin.Header.Mode != 0o755 || bin.Header.Uid != 0 || bin.Header.Gid != 0 {
		t.Errorf("binary mode %o owner %d:%d; want 755 0:0", bin.Header.Mode, bin.Header.Uid, bin.Header.Gid)
	}
	ef, err := elf.NewFile(bytes.NewReader(bin.Data))
	if err != nil {
		t.Fatalf("binary is not ELF: %v", err)
	}
	wantMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[platform.Architecture]
	if ef.Machine != wantMachine {
		t.Errorf("binary machine = %v; want %v", ef.Machine, wantMachine)
	}
	if platform.Architecture == "amd64" {
		runVersion(t, bin.Data, wantVersion)
	}
}

func checkBase(t *testing.T, files map[string]file) {
	ca, ok := files["etc/ssl/certs/ca-certificates.crt"]
	if !ok {
		t.Fatal("no CA bundle at /etc/ssl/certs/ca-certificates.crt")
	}
	certs := 0
	for rest := ca.Data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			t.Fatalf("CA bundle certificate %d: %v", certs, err)
		}
		certs++
	}
	if certs == 0 {
		t.Error("the CA bundle holds no certificate")
	}

	passwd, ok := files["etc/passwd"]
	if !ok || !hasID(string(passwd.Data), "nonroot", "65532") {
		t.Errorf("/etc/passwd does not name uid 65532:\n%s", passwd.Data)
	}
	group, ok := files["etc/group"]
	if !ok || !hasID(string(group.Data), "nonroot", "65532") {
		t.Errorf("/etc/group does not name gid 65532:\n%s", group.Data)
	}
	for _, name := range []string{"etc/passwd", "etc/group", "etc/ssl/certs/ca-certificates.crt"} {
		if h := files[name].Header; h != nil && (h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(time.Unix(0, 0))) {
			t.Errorf("%s owner %d:%d mtime %v; want root and the fixed epoch", name, h.Uid, h.Gid, h.ModTime)
		}
	}
	tmp, ok := files["tmp"]
	if !ok || tmp.Header.Typeflag != tar.TypeDir || tmp.Header.Mode != 0o1777 {
		t.Errorf("/tmp is not a directory with mode 1777: %+v", tmp.Header)
	}
}

// hasID reports whether a passwd or group file has the entry name:x:id.
func hasID(content, name, id string) bool {
	for _, line := range strings.Split(content, "\n") {
		fields := strings.Split(line, ":")
		if len(fields) >= 3 && fields[0] == name && fields[2] == id {
			return true
		}
	}
	return false
}

// runVersion runs the binary taken out of the layer. The CI host is linux/amd64; anywhere else this
// check cannot run and says so as a failure rather than pass without it.
func runVersion(t *testing.T, bin []byte, want string) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Fatalf("cannot run the linux/amd64 binary on %s/%s; run this test on linux/amd64", runtime.GOOS, runtime.GOARCH)
	}
	path := filepath.Join(t.TempDir(), "kube-fip-operator")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", path, err, out)
	}
	if !strings.Contains(string(out), want) {
		t.Errorf("--version printed %q; want it to contain %q", out, want)
	}
}

func TestWriteLayoutRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := WriteLayout(dir, Options{Version: "v1", Revision: "r", Created: time.Unix(1, 0), Architectures: []string{"amd64"}, BinDir: dir})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("WriteLayout into a non-empty directory: %v; want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep")); err != nil {
		t.Errorf("the existing file is gone: %v", err)
	}
}

// TestGuestChartsInTheImage: given a directory of the pinned archives, every platform's image holds
// them at the path the operator reads, byte for byte; an archive whose digest is not the pinned one,
// a file that is no pinned archive, or a pinned archive missing refuses the build; without a
// directory the image holds none. The stand-ins play the upstream archives, pinned by their own
// digests, as the upstream archives cannot be fetched here; with the real pins they are refused.
func TestGuestChartsInTheImage(t *testing.T) {
	archs := []string{"amd64", "arm64"}
	binDir := t.TempDir()
	for _, arch := range archs {
		if err := os.MkdirAll(filepath.Dir(BinaryPath(binDir, arch)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(BinaryPath(binDir, arch), []byte("not really a binary"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	standIns := []*chart.Chart{chartrepo.KubevipChart(config.DefaultKubevipChartVersion),
		chartrepo.KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion)}
	dir := t.TempDir()
	var pinned []chartarchive.PinnedChart
	want := map[string][]byte{}
	for i, c := range standIns {
		path, err := chartrepo.WriteArchive(c, dir)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		pc := chartarchive.PinnedCharts()[i]
		pc.Digest = guestchart.Digest(data)
		pinned = append(pinned, pc)
		want[filepath.Join(strings.TrimPrefix(chartarchive.DefaultGuestChartsDir, "/"), pc.File())] = data
	}
	opts := Options{Version: testVersion, Revision: testRevision, Created: time.Unix(1, 0), BinDir: binDir, Architectures: archs,
		GuestChartsDir: dir, GuestCharts: pinned}

	idx, err := Index(opts)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, desc := range im.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		files := flatten(t, img)
		for name, data := range want {
			f, ok := files[name]
			if !ok || !bytes.Equal(f.Data, data) || f.Header.Mode != 0o644 || f.Header.Uid != 0 {
				t.Errorf("%s: /%s is missing or not the archive (present %t, mode %o)", desc.Platform, name, ok, f.Header.Mode)
			}
		}
	}

	for name, tc := range map[string]struct {
		edit func(dir string)
		pins []chartarchive.PinnedChart
		says string
	}{
		"the real pins":   {func(string) {}, nil, "not the pinned " + chartarchive.PinnedCharts()[0].Digest},
		"another file":    {func(d string) { _ = os.WriteFile(filepath.Join(d, "nginx-1.0.0.tgz"), []byte("x"), 0o644) }, pinned, "nginx-1.0.0.tgz is not the archive of a pinned chart"},
		"one missing":     {func(d string) { _ = os.Remove(filepath.Join(d, "kube-vip-cloud-provider-0.2.10.tgz")) }, pinned, "holds no kube-vip-cloud-provider-0.2.10.tgz"},
		"another archive": {func(d string) { _ = os.WriteFile(filepath.Join(d, "kube-vip-0.9.9.tgz"), []byte("x"), 0o644) }, pinned, "kube-vip-0.9.9.tgz has digest"},
	} {
		d := t.TempDir()
		for _, c := range standIns {
			if _, err := chartrepo.WriteArchive(c, d); err != nil {
				t.Fatal(err)
			}
		}
		tc.edit(d)
		o := opts
		o.GuestChartsDir, o.GuestCharts = d, tc.pins
		if _, err := Index(o); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want the build refused saying %q", name, err, tc.says)
		}
	}

	o := opts
	o.GuestChartsDir = ""
	if names, err := GuestCharts(o); err != nil || len(names) != 0 {
		t.Errorf("without a directory the image ships %v (%v)", names, err)
	}
	bare, err := Index(o)
	if err != nil {
		t.Fatal(err)
	}
	bm, _ := bare.IndexManifest()
	bareImg, err := bare.Image(bm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	for name := range flatten(t, bareImg) {
		if strings.HasPrefix(name, strings.TrimPrefix(chartarchive.DefaultGuestChartsDir, "/")) {
			t.Errorf("without a directory the image holds %s", name)
		}
	}
}
