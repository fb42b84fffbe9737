package helminstall

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/approve"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
)

// The Helm advisories published since 2025 that touch what the operator does with a chart:
// fetch it and load it (its schema is never read). Each test feeds the attack to the
// operator's own path and expects a clear error, no panic and no file or network access.

// bomb is a chart archive whose one file decompresses to size bytes of zeros.
func bomb(t *testing.T, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(gz)
	meta := chartYAML("kube-vip", "1.0.0")
	if err := tw.WriteHeader(&tar.Header{Name: "kube-vip/Chart.yaml", Mode: 0o644, Size: int64(len(meta)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write(meta)
	if err := tw.WriteHeader(&tar.Header{Name: "kube-vip/templates/zeros.yaml", Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(zeros)) {
		_, _ = tw.Write(zeros[:min(left, int64(len(zeros)))])
	}
	_ = tw.Close()
	_ = gz.Close()
	return buf.Bytes()
}

// CVE-2025-32386: a small archive that decompresses to far more than memory should hold. Not
// allowed by digest, it is never unpacked; allowed, it is refused for its unpacked size.
func TestAdvisoryArchiveBombIsRefused(t *testing.T) {
	t.Parallel()
	data := bomb(t, 512<<20)
	repo := startRepo(t, indexFor("kube-vip", "1.0.0"), data)
	for _, tc := range []struct {
		plan *installpolicy.Plan
		want string
	}{
		{defaultPlan(t, "1.0.0"), "neither that of the pinned"},
		{planAllowing(t, "1.0.0", data), "its file kube-vip/templates/zeros.yaml is larger than 256 KiB"},
	} {
		in := newTestInstaller(t, DefaultLimits())
		_, err := in.chart(context.Background(), Release{Chart: "kube-vip", RepoURL: repo.URL, Version: "1.0.0", Plan: tc.plan})
		var refused *guestchart.Refusal
		if !errors.As(err, &refused) || refused.Reason != guestchart.ReasonChartRefused || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("a %d-byte archive of 512 MiB = %v; want ChartRefused saying %q", len(data), err, tc.want)
		}
		t.Logf("a %d KiB archive decompressing to 512 MiB: %v", len(data)/1024, err)
	}
}

// CVE-2025-55198: a Chart.yaml with a null maintainer or non-string import-values, and an
// index.yaml with an empty entry, once made Helm panic.
func TestAdvisoryMalformedYAMLIsAnErrorNotAPanic(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		meta    string
		refused bool
	}{
		"null maintainer": {"apiVersion: v2\nname: kube-vip\nversion: 1.0.0\nmaintainers:\n- null\n", true},
		// Loaded without a panic, and then refused by the install policy for its dependency.
		"non-string import-values": {"apiVersion: v2\nname: kube-vip\nversion: 1.0.0\ndependencies:\n- name: sub\n  version: 1.0.0\n  import-values:\n  - child: [1]\n    parent: {a: b}\n", true},
		"plain":                    {"apiVersion: v2\nname: kube-vip\nversion: 1.0.0\n", false},
		"not YAML":                 {"apiVersion: v2\nname: [kube-vip\n", true},
	} {
		t.Run(name, func(t *testing.T) {
			data := archive(t, "kube-vip", map[string][]byte{"Chart.yaml": []byte(tc.meta)})
			repo := startRepo(t, indexFor("kube-vip", "1.0.0"), data)
			in := newTestInstaller(t, DefaultLimits())
			pkg, err := in.chart(context.Background(), Release{Chart: "kube-vip", RepoURL: repo.URL, Version: "1.0.0", Plan: planAllowing(t, "1.0.0", data)})
			if tc.refused {
				if err == nil || strings.Contains(err.Error(), "malformed") {
					t.Errorf("= %v; want Helm's own clear refusal, not a recovered panic", err)
				}
				return
			}
			if err != nil || pkg.Chart.Metadata.Name != "kube-vip" {
				t.Fatalf("= %v; want loaded", err)
			}
		})
	}
	t.Run("empty index entry", func(t *testing.T) {
		index := "apiVersion: v1\nentries:\n  kube-vip:\n  - null\n  -\n  - apiVersion: v2\n    name: kube-vip\n    version: 1.0.0\n    urls:\n    - kube-vip-1.0.0.tgz\n"
		data := archive(t, "kube-vip", map[string][]byte{"Chart.yaml": chartYAML("kube-vip", "1.0.0")})
		repo := startRepo(t, []byte(index), data)
		in := newTestInstaller(t, DefaultLimits())
		if ch, err := in.chart(context.Background(), Release{Chart: "kube-vip", RepoURL: repo.URL, Plan: planAllowing(t, "", data)}); err != nil || ch.Chart.Metadata.Version != "1.0.0" {
			t.Errorf("index with empty entries = %v, %v; want the valid entry", ch, err)
		}
	})
}

// schemaServer serves an empty schema to anyone who asks, and counts the asks.
func schemaServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	hits := &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	return srv, hits
}

// TestHelmRunsNoTemplateOfTheChart: Helm, in the operator's process, installs and upgrades the
// approved manifest and executes none of the chart's templates, nor reads its schema (CVE-2025-32387,
// CVE-2025-55199: a schema nested without end, or whose $ref names a device, a file or a URL): a
// chart whose template fails when executed and whose schema reaches out is applied, and the URL is
// never asked. The templates run only in the render process, within its budget.
func TestHelmRunsNoTemplateOfTheChart(t *testing.T) {
	t.Parallel()
	srv, hits := schemaServer(t)
	ch := &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: "v2", Name: "kube-vip", Version: "1.0.0"},
		Schema:    []byte(`{"properties":{"a":{"$ref":"` + srv.URL + `/schema.json"}},"$ref":"file:///dev/zero"}`),
		Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte(`{{ fail "executed in the operator's process" }}`)}},
	}
	cfg := &action.Configuration{Releases: storage.Init(driver.NewMemory()), KubeClient: &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities, Log: t.Logf}
	approval := &approve.Approval{Manifest: "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: approved\n  namespace: kube-system\n"}
	rel := Release{Namespace: "kube-system", Name: "demo", Plan: &installpolicy.Plan{}}
	for _, install := range []bool{true, false} {
		if err := apply(context.Background(), cfg, rel, ch, approval, install); err != nil {
			t.Fatalf("install %v: %v; want the approved manifest applied without the chart's templates", install, err)
		}
		last, err := cfg.Releases.Last("demo")
		if err != nil || last.Manifest != approval.Manifest {
			t.Fatalf("install %v: release %v, %v; want the approved manifest", install, last, err)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("the schema's URL was asked %d times; want never", hits.Load())
	}
}

// oras-go before v2.6.1 (GHSA-vh4v-2xq2-g5cg and its neighbours): a manifest whose layer claims a
// size of petabytes made content.ReadAll allocate it, and the process died with "fatal error: out
// of memory", which no recover catches. A registry is untrusted: its lie must be an error.
func TestAdvisoryRegistryLyingAboutALayerSize(t *testing.T) {
	t.Parallel()
	const repoPath = "/v2/charts/kube-vip"
	config := []byte(`{"name":"kube-vip","version":"1.0.0","apiVersion":"v2"}`)
	manifest := fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",`+
		`"config":{"mediaType":"application/vnd.cncf.helm.config.v1+json","digest":"%s","size":%d},`+
		`"layers":[{"mediaType":"application/vnd.cncf.helm.chart.content.v1.tar+gzip",`+
		`"digest":"sha256:%s","size":%d}]}`, digestOf(config), len(config), strings.Repeat("ab", 32), int64(3)<<46)
	var blobs atomic.Int64
	registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/":
			w.WriteHeader(http.StatusOK)
		case strings.HasPrefix(r.URL.Path, repoPath+"/manifests/"):
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			w.Header().Set("Docker-Content-Digest", digestOf([]byte(manifest)))
			if r.Method != http.MethodHead {
				_, _ = w.Write([]byte(manifest))
			}
		case r.URL.Path == repoPath+"/blobs/"+digestOf(config):
			_, _ = w.Write(config)
		case strings.HasPrefix(r.URL.Path, repoPath+"/blobs/"):
			// Whatever a client asks of the layer, it gets a few bytes without a length.
			blobs.Add(1)
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte("not a chart"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer registry.Close()
	in := newTestInstaller(t, DefaultLimits())
	ref := "oci://" + strings.TrimPrefix(registry.URL, "http://") + "/charts/kube-vip"
	_, err := in.chart(context.Background(), Release{Ref: ref, Version: "1.0.0", Plan: defaultPlan(t, "1.0.0")})
	if err == nil {
		t.Fatal("a layer of 3<<46 bytes was accepted")
	}
	t.Logf("a layer claiming %d bytes: %v (layer requests: %d)", int64(3)<<46, err, blobs.Load())
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// defaultPlan is the install policy's plan of kube-vip's chart at version with the default values.
func defaultPlan(t *testing.T, version string) *installpolicy.Plan {
	t.Helper()
	p, err := installpolicy.Default().NewPlan(guestchart.Kubevip, "values", version, nil, config.Default().Kubevip.Values)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeGuest is a guest Client on the fake clientset holding objects.
func fakeGuest(objects ...runtime.Object) (*guest.Client, *fake.Clientset) {
	kube := fake.NewSimpleClientset(objects...)
	return &guest.Client{Name: "guest001", Core: kube.CoreV1(), Apps: kube.AppsV1()}, kube
}

// writes are the actions of kube that are not reads.
func writes(kube *fake.Clientset) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range kube.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			out = append(out, a)
		}
	}
	return out
}
