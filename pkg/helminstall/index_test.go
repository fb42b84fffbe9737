package helminstall

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/repo"
)

// TestParseIndex: only the entries of the charts asked for are read; an alias among them is
// refused, one elsewhere is never looked at; JSON is read as YAML; an index without apiVersion is
// refused, and entries without a version or a URL are left out.
func TestParseIndex(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		index string
		want  string // the versions of kube-vip read, or the error
	}{
		"block":          {"apiVersion: v1\nentries:\n  kube-vip:\n  - version: 0.9.9\n    urls: [a.tgz]\n    digest: abc\n  - version: 0.9.8\n    urls: [b.tgz]\n", "0.9.9 0.9.8"},
		"json":           {`{"apiVersion":"v1","entries":{"kube-vip":[{"version":"0.9.9","urls":["a.tgz"]}]}}`, "0.9.9"},
		"no apiVersion":  {"entries:\n  kube-vip:\n  - version: 0.9.9\n    urls: [a.tgz]\n", "error: the index has no apiVersion"},
		"not a mapping":  {"- a\n- b\n", "error: the index is not a YAML mapping"},
		"invalid":        {"apiVersion: v1\nentries: {kube-vip: [\n", "error: the index is not valid YAML"},
		"alias among":    {"apiVersion: v1\nx: &e {version: 0.9.9, urls: [a.tgz]}\nentries:\n  kube-vip:\n  - *e\n", "error: the index's entries of chart kube-vip use YAML aliases"},
		"alias as merge": {"apiVersion: v1\nx: &e {urls: [a.tgz]}\nentries:\n  kube-vip:\n  - <<: *e\n    version: 0.9.9\n", "error: the index's entries of chart kube-vip use YAML aliases"},
		"alias elsewhere": {"apiVersion: v1\nx: &a [1, 2]\ny: [*a, *a, *a]\nentries:\n  other: [*a]\n  kube-vip:\n  - version: 0.9.9\n    urls: [a.tgz]\n",
			"0.9.9"},
		"invalid entries": {"apiVersion: v1\nentries:\n  kube-vip:\n  - null\n  - version: 1.0.0\n  - urls: [a.tgz]\n  - [x]\n  - version: 0.9.9\n    urls: [a.tgz]\n",
			"0.9.9"},
		"not a list": {"apiVersion: v1\nentries:\n  kube-vip: {version: 0.9.9}\n", "error: the index's entries of chart kube-vip are not a list"},
		"no entries": {"apiVersion: v1\n", ""},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parseIndex([]byte(tc.index), []string{"kube-vip"})
			text := ""
			if err != nil {
				text = "error: " + err.Error()
			} else {
				var versions []string
				for _, e := range got["kube-vip"] {
					versions = append(versions, e.Version)
				}
				text = strings.Join(versions, " ")
			}
			if !strings.HasPrefix(text, tc.want) || (tc.want == "" && text != "") {
				t.Errorf("= %q; want %q", text, tc.want)
			}
		})
	}
}

func TestPickVersion(t *testing.T) {
	t.Parallel()
	entries := []indexEntry{{Version: "0.9.8"}, {Version: "0.9.10"}, {Version: "1.0.0-rc1"}, {Version: "v0.9.9"}, {Version: "not-a-version"}}
	for version, want := range map[string]string{
		"":              "0.9.10",
		"0.9.8":         "0.9.8",
		"v0.9.9":        "v0.9.9",
		"0.9.9":         "v0.9.9",
		"~0.9":          "0.9.10",
		"<0.9.9":        "0.9.8",
		"1.0.0-rc1":     "1.0.0-rc1",
		"not-a-version": "not-a-version",
		"2.0.0":         "none",
	} {
		got, ok := pickVersion(entries, indexEntry.version, version)
		if !ok {
			got.Version = "none"
		}
		if got.Version != want {
			t.Errorf("pickVersion(%q) = %s; want %s", version, got.Version, want)
		}
	}
}

// indexShapes are indexes of about size bytes: the real kube-vip index's entries repeated under
// other chart names, and the shapes that cost YAML's parser most per byte.
func indexShapes(size int) map[string][]byte {
	out := map[string][]byte{}
	var real bytes.Buffer
	real.WriteString("apiVersion: v1\nentries:\n")
	for i := 0; real.Len() < size-20*700; i++ {
		fmt.Fprintf(&real, "  chart-%d:\n", i)
		for v := 0; v < 20; v++ {
			fmt.Fprintf(&real, "  - apiVersion: v2\n    appVersion: v1.0.%d\n    created: \"2026-03-23T18:30:28.6407607Z\"\n"+
				"    description: A Helm chart for kube-vip\n    digest: 106dc112b119abdbac82ea4be13dc8d815028972d101a45bd7a448d68611f1f6\n"+
				"    home: https://github.com/kube-vip/helm-charts\n    icon: https://raw.githubusercontent.com/kube-vip/kube-vip/main/kube-vip.png\n"+
				"    keywords:\n    - networking\n    - virtual ip\n    maintainers:\n    - name: lubronzhan\n    name: chart-%d\n    type: application\n"+
				"    urls:\n    - https://github.com/kube-vip/helm-charts/releases/download/kube-vip-0.9.%d/kube-vip-0.9.%d.tgz\n    version: 0.9.%d\n",
				v, i, v, v, v)
		}
	}
	out["real entries"] = real.Bytes()
	flow := []byte("apiVersion: v1\nentries:\n  kube-vip:\n  - version: 0.9.9\n    urls: [")
	flow = append(flow, bytes.Repeat([]byte("a,"), (size-len(flow)-3)/2)...)
	out["flow sequence of one-letter scalars"] = append(flow, "a]\n"...)
	block := []byte("apiVersion: v1\nentries:\n  kube-vip:\n  - version: 0.9.9\n    keywords:\n")
	block = append(block, bytes.Repeat([]byte("    - a\n"), (size-len(block))/8)...)
	out["block sequence of one-letter scalars"] = block
	nulls := []byte("apiVersion: v1\nentries:\n  kube-vip:\n  - version: 0.9.9\n    urls: [a]\n    annotations: {")
	nulls = append(nulls, bytes.Repeat([]byte("? ,"), (size-len(nulls)-3)/3)...)
	out["flow mapping of empty keys"] = append(nulls, "a}\n"...)
	var keys bytes.Buffer
	keys.WriteString("apiVersion: v1\nentries: {kube-vip: [{version: 0.9.9, annotations: {")
	for i := 0; keys.Len() < size-32; i++ {
		fmt.Fprintf(&keys, "%x: a,", i)
	}
	keys.WriteString("z: a}}]}\n")
	out["flow mapping of short keys"] = keys.Bytes()
	return out
}

// allocated is what f allocates with the collector off: an upper bound of what it holds at once.
func allocated(f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// indexBudget is what one index may make the operator hold while it is parsed (index.go).
const indexBudget = 40 << 20

// TestIndexParseMemory measures what parsing an index of MaxIndexBytes allocates, for the real
// index's shape and the costliest ones, and holds it to indexBudget. Helm's loader, which the
// operator used before, is measured on the same bytes for comparison.
func TestIndexParseMemory(t *testing.T) {
	limit := int(DefaultLimits().MaxIndexBytes)
	dir := t.TempDir()
	for name, data := range indexShapes(limit) {
		if len(data) > limit {
			t.Fatalf("%s: the shape is %d bytes, over the limit", name, len(data))
		}
		var err error
		start := time.Now()
		n := allocated(func() { _, err = parseIndex(data, indexCharts("kube-vip")) })
		took := time.Since(start)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		file := filepath.Join(dir, "index.yaml")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		helm := allocated(func() { _, _ = repo.LoadIndexFile(file) })
		t.Logf("%-38s %3d KiB: %5.1f MiB allocated (%5.1f bytes a byte) in %s; Helm's loader %6.1f MiB (%5.1f bytes a byte)",
			name, len(data)>>10, float64(n)/(1<<20), float64(n)/float64(len(data)), took.Round(time.Millisecond),
			float64(helm)/(1<<20), float64(helm)/float64(len(data)))
		if n > indexBudget {
			t.Errorf("%s: parsing %d KiB allocated %d MiB, over the %d MiB an index may cost", name, len(data)>>10, n>>20, indexBudget>>20)
		}
	}
}

// TestIndexIsReadOncePerSource: the two charts of a repository, asked for at once and again a
// moment later, cost one read of its index; a version published since is still found, with a
// second read.
func TestIndexIsReadOncePerSource(t *testing.T) {
	t.Parallel()
	listing := func(kubevipVersions ...string) []byte {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nentries:\n  kube-vip-cloud-provider:\n  - version: 1.0.0\n    urls: [p.tgz]\n  kube-vip:\n")
		for _, v := range kubevipVersions {
			fmt.Fprintf(&b, "  - version: %s\n    urls: [kube-vip-%s.tgz]\n", v, v)
		}
		return []byte(b.String())
	}
	data := archive(t, "kube-vip", map[string][]byte{"Chart.yaml": chartYAML("kube-vip", "1.0.0")})
	repo := startRepo(t, listing("1.0.0"), data)
	in := newTestInstaller(t, DefaultLimits())
	fetch := func(chart, version string) error {
		_, err := in.fetcher.fetch(context.Background(), Release{Chart: chart, RepoURL: repo.URL, Version: version})
		return err
	}
	for _, chart := range []string{"kube-vip", "kube-vip-cloud-provider", "kube-vip"} {
		if err := fetch(chart, "1.0.0"); err != nil {
			t.Fatal(err)
		}
	}
	if got := repo.indexGets.Load(); got != 1 {
		t.Errorf("three fetches from one repository read its index %d times; want once", got)
	}
	repo.index = listing("1.0.0", "1.0.1")
	if err := fetch("kube-vip", "1.0.1"); err != nil {
		t.Errorf("a version published a moment later: %v", err)
	}
	if got := repo.indexGets.Load(); got != 2 {
		t.Errorf("the index was read %d times in all; want twice", got)
	}
}
