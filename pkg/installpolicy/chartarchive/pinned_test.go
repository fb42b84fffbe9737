package chartarchive

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// TestPinnedChartsArePkgConfigsPair: the pinned archives are of the versions installed by default.
func TestPinnedChartsArePkgConfigsPair(t *testing.T) {
	t.Parallel()
	want := map[guestchart.Chart]string{guestchart.Kubevip: config.DefaultKubevipChartVersion, guestchart.CloudProvider: config.DefaultKubevipCloudProviderChartVersion}
	for _, pc := range PinnedCharts() {
		if want[pc.Chart] != pc.Version {
			t.Errorf("%s is pinned at %s; pkg/config installs %s", pc.Chart, pc.Version, want[pc.Chart])
		}
		if _, _, err := parseDigestEntry(DigestEntry(pc.Chart, pc.Digest)); err != nil {
			t.Errorf("%s's pinned digest: %v", pc.Chart, err)
		}
		if !strings.HasSuffix(pc.URL, "/"+pc.File()) {
			t.Errorf("%s's URL %s does not end in %s", pc.Chart, pc.URL, pc.File())
		}
		delete(want, pc.Chart)
	}
	if len(want) > 0 {
		t.Errorf("not pinned: %v", want)
	}
}

// TestAllowedChartDigests: the deployment's entries name a chart and a sha256 digest; a malformed
// one stops New with a message naming it, and a digest allowed for one chart is not allowed for
// the other.
func TestAllowedChartDigests(t *testing.T) {
	t.Parallel()
	d := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		entries []string
		err     string
	}{
		{[]string{"kube-vip@" + d, " ", "kube-vip-cloud-provider@" + d}, ""},
		{[]string{"kube-vip"}, "must be <chart>@sha256:<64 hex digits>"},
		{[]string{"nginx@" + d}, `names chart "nginx"`},
		{[]string{"kube-vip@sha512:" + strings.Repeat("ab", 64)}, "must be sha256:"},
		{[]string{"kube-vip@sha256:" + strings.Repeat("AB", 32)}, "lower-case"},
		{[]string{"kube-vip@sha256:" + strings.Repeat("zz", 32)}, "64 lower-case hex digits"},
		{[]string{"kube-vip@sha256:abc"}, "64 lower-case hex digits"},
	} {
		_, err := New(tc.entries)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.entries, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "allowed chart digest")):
			t.Errorf("%q: %v; want an error saying %q", tc.entries, err, tc.err)
		}
	}
	p, err := New([]string{"kube-vip@" + d})
	if err != nil {
		t.Fatal(err)
	}
	pinned, _ := Pinned(guestchart.CloudProvider)
	for _, tc := range []struct {
		chart  guestchart.Chart
		digest string
		want   bool
	}{
		{guestchart.Kubevip, d, true},
		{guestchart.CloudProvider, d, false},
		{guestchart.CloudProvider, pinned.Digest, true},
		{guestchart.Kubevip, pinned.Digest, false},
		{guestchart.Kubevip, "sha256:" + strings.Repeat("0", 64), false},
	} {
		if got := p.CheckDigest(tc.chart, tc.digest) == nil; got != tc.want {
			t.Errorf("CheckDigest(%s, %s) allows it: %v; want %v", tc.chart, tc.digest, got, tc.want)
		}
	}
	if !strings.Contains(p.String(), "kube-vip@"+d) {
		t.Errorf("the policy %s does not list the allowed digest", p)
	}
}

// TestServedByPinned: the bundled archive stands for the pinned version (or none) from an
// upstream Helm repository, and for nothing else.
func TestServedByPinned(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		repo, ref, version string
		want               bool
	}{
		{"https://kube-vip.io/helm-charts", "", "0.9.9", true},
		{"https://kube-vip.io/helm-charts/", "", "", true},
		{"https://KUBE-VIP.io/helm-charts", "", "v0.9.9", true},
		{"https://kube-vip.github.io/helm-charts", "", "0.9.9", true},
		{"https://kube-vip.io/helm-charts", "", "0.9.8", false},
		{"https://kube-vip.io/helm-charts", "", "~0.9", false},
		{"https://kube-vip.io/helm-charts", "oci://ghcr.io/kube-vip/kube-vip", "0.9.9", false},
		{"http://kube-vip.io/helm-charts", "", "0.9.9", false},
		{"https://kube-vip.io:8443/helm-charts", "", "0.9.9", false},
		{"https://kube-vip.io/helm-charts/other", "", "0.9.9", false},
		{"https://mirror.example.com/helm-charts", "", "0.9.9", false},
	} {
		if got := ServedByPinned(guestchart.Kubevip, tc.repo, tc.ref, tc.version); got != tc.want {
			t.Errorf("ServedByPinned(%s, %q, %q) = %v; want %v", tc.repo, tc.ref, tc.version, got, tc.want)
		}
	}
}

// TestLoadBundle: a bundled archive is checked as a fetched one is; a missing directory or
// archive is a note, and an archive the policy does not allow, or of another version, is an error.
func TestLoadBundle(t *testing.T) {
	t.Parallel()
	kubevip := chartrepo.KubevipChart(config.DefaultKubevipChartVersion)
	provider := chartrepo.KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion)
	allowing := func(entries ...string) Archives {
		p, err := New(entries)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	both := allowing(chartrepo.DigestEntries(kubevip, provider)...)

	b, notes, err := both.LoadBundle(filepath.Join(t.TempDir(), "none"))
	if err != nil || len(b.packages) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "does not exist") {
		t.Errorf("a missing directory: %d charts, %q, %v", len(b.packages), notes, err)
	}

	dir := t.TempDir()
	if _, err := chartrepo.WriteArchive(kubevip, dir); err != nil {
		t.Fatal(err)
	}
	b, notes, err = both.LoadBundle(dir)
	if err != nil || len(b.packages) != 1 || len(notes) != 2 || !strings.Contains(strings.Join(notes, "\n"), "kube-vip-cloud-provider-0.2.10.tgz is not there") {
		t.Errorf("one archive of two: %d charts, %q, %v", len(b.packages), notes, err)
	}
	if b.For(guestchart.Kubevip, "https://kube-vip.io/helm-charts", "", "") == nil || b.For(guestchart.CloudProvider, "https://kube-vip.io/helm-charts", "", "") != nil {
		t.Error("the bundle does not hold what the directory does")
	}

	if _, _, err := allowing().LoadBundle(dir); err == nil || !strings.Contains(err.Error(), "neither that of the pinned kube-vip 0.9.9") {
		t.Errorf("an archive the policy does not allow: %v; want the operator stopped", err)
	}
	other := chartrepo.KubevipChart("0.9.8")
	data, err := chartrepo.Archive(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kube-vip-0.9.9.tgz"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := allowing(chartrepo.DigestEntries(other)...).LoadBundle(dir); err == nil || !strings.Contains(err.Error(), "not 0.9.9 as asked") {
		t.Errorf("an archive of another version: %v; want the operator stopped", err)
	}
}
