package chartarchive

import (
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// tgz packs files (path → content) as a gzip'd tar.
func tgz(t testing.TB, files ...[2]string) []byte { return chartrepo.TarGzForTest(t, files...) }

func allowingArchives(t testing.TB, chart guestchart.Chart, archives ...[]byte) Archives {
	t.Helper()
	var entries []string
	for _, a := range archives {
		entries = append(entries, DigestEntry(chart, guestchart.Digest(a)))
	}
	p, err := New(entries)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPackageIsCheckedByDigestFirst: an archive whose digest is not allowed for the chart is
// refused, naming the digest and the setting that would allow it, before anything of it is read;
// one allowed is loaded once and shared; the version asked for is checked.
func TestPackageIsCheckedByDigestFirst(t *testing.T) {
	t.Parallel()
	data, err := chartrepo.Archive(chartrepo.KubevipChart(config.DefaultKubevipChartVersion))
	if err != nil {
		t.Fatal(err)
	}
	garbage := []byte("not an archive at all")
	for _, tc := range []struct {
		name   string
		policy Archives
		chart  guestchart.Chart
		data   []byte
		want   string
	}{
		{"not allowed", Archives{}, guestchart.Kubevip, data, "add kube-vip@" + guestchart.Digest(data) + " to security.allowedChartDigests"},
		{"allowed for the other chart", allowingArchives(t, guestchart.CloudProvider, data), guestchart.Kubevip, data, "neither that of the pinned"},
		{"garbage, not allowed", Archives{}, guestchart.Kubevip, garbage, "neither that of the pinned"},
		{"garbage, allowed", allowingArchives(t, guestchart.Kubevip, garbage), guestchart.Kubevip, garbage, "it is not a gzip archive"},
		{"another chart's name", allowingArchives(t, guestchart.CloudProvider, data), guestchart.CloudProvider, data, `package is named "kube-vip"`},
	} {
		_, err := tc.policy.Load(tc.chart, "", tc.data)
		if reasonOf(err) != guestchart.ReasonChartRefused || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want ChartRefused saying %q", tc.name, err, tc.want)
		}
	}

	p := allowingArchives(t, guestchart.Kubevip, data)
	first, err := p.Load(guestchart.Kubevip, config.DefaultKubevipChartVersion, data)
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.Load(guestchart.Kubevip, "", append([]byte(nil), data...))
	if err != nil || again != first {
		t.Errorf("the same archive again = %p, %v; want the package loaded first, %p", again, err, first)
	}
	if first.Digest != guestchart.Digest(data) || first.Chart.Metadata.Version != config.DefaultKubevipChartVersion {
		t.Errorf("package %s %s", first.Digest, first.Chart.Metadata.Version)
	}
	if _, err := p.Load(guestchart.Kubevip, "0.9.8", data); reasonOf(err) != guestchart.ReasonChartRefused || !strings.Contains(err.Error(), "not 0.9.8 as asked") {
		t.Errorf("another version asked for: %v", err)
	}
}

// TestPackageBounds: an allowed archive is still held to its bounds while it is unpacked, before
// Helm's loader keeps any of it.
func TestPackageBounds(t *testing.T) {
	t.Parallel()
	chartYAML := [2]string{"kube-vip/Chart.yaml", "apiVersion: v2\nname: kube-vip\nversion: 0.9.9\n"}
	big := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"a small chart", tgz(t, chartYAML, [2]string{"kube-vip/values.yaml", "a: b\n"}), ""},
		{"a large values.yaml", tgz(t, chartYAML, [2]string{"kube-vip/values.yaml", "a: " + big(maxValuesBytes) + "\n"}), "its file kube-vip/values.yaml is larger than 64 KiB"},
		{"a large template", tgz(t, chartYAML, [2]string{"kube-vip/templates/a.yaml", big(maxFileBytes + 1)}), "larger than 256 KiB"},
		{"many files", tgz(t, chartYAML, [2]string{"kube-vip/templates/a.yaml", big(maxFileBytes)}, [2]string{"kube-vip/templates/b.yaml", big(maxFileBytes)},
			[2]string{"kube-vip/templates/c.yaml", big(maxFileBytes)}, [2]string{"kube-vip/templates/d.yaml", big(maxFileBytes)}), "unpacks to more than 1024 KiB"},
		{"not a tar", func() []byte {
			var b bytes.Buffer
			gz := gzip.NewWriter(&b)
			_, _ = gz.Write([]byte(big(1000)))
			_ = gz.Close()
			return b.Bytes()
		}(), "it is not a tar archive"},
	} {
		_, err := allowingArchives(t, guestchart.Kubevip, tc.data).Load(guestchart.Kubevip, "", tc.data)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (reasonOf(err) != guestchart.ReasonChartRefused || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v; want ChartRefused saying %q", tc.name, err, tc.want)
		}
	}
	large := make([]byte, MaxArchiveBytes+1)
	if _, err := allowingArchives(t, guestchart.Kubevip, large).Load(guestchart.Kubevip, "", large); err == nil || !strings.Contains(err.Error(), "larger than 1024 KiB") {
		t.Errorf("an archive over the limit: %v", err)
	}
}

// TestPackageCacheIsBounded: the policy keeps the packages it loaded last, and no more.
func TestPackageCacheIsBounded(t *testing.T) {
	t.Parallel()
	var archives [][]byte
	for i := 0; i < packageCacheSize+3; i++ {
		archives = append(archives, tgz(t, [2]string{"kube-vip/Chart.yaml", "apiVersion: v2\nname: kube-vip\nversion: 0.9.9\ndescription: " + strings.Repeat("x", i) + "\n"}))
	}
	p := allowingArchives(t, guestchart.Kubevip, archives...)
	for _, a := range archives {
		if _, err := p.Load(guestchart.Kubevip, "", a); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(p.packages.pkgs); n != packageCacheSize {
		t.Errorf("the cache holds %d packages; want %d", n, packageCacheSize)
	}
	if _, ok := p.packages.get(guestchart.Digest(archives[0])); ok {
		t.Error("the package loaded first is still kept")
	}
	if _, ok := p.packages.get(guestchart.Digest(archives[len(archives)-1])); !ok {
		t.Error("the package loaded last is not kept")
	}
}

func reasonOf(err error) string {
	var r *guestchart.Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}
