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
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
)

// The Helm advisories published since 2025 that touch what the operator does with a chart:
// fetch it, load it, and validate values against its schema. Each test feeds the attack to the
// operator's own path and expects a clear error, no panic and no file or network access.

// bomb is a chart archive whose one file decompresses to size bytes of zeros.
func bomb(t *testing.T, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(gz)
	meta := chartYAML("bomb", "1.0.0")
	if err := tw.WriteHeader(&tar.Header{Name: "bomb/Chart.yaml", Mode: 0o644, Size: int64(len(meta)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write(meta)
	if err := tw.WriteHeader(&tar.Header{Name: "bomb/templates/zeros.yaml", Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
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

// CVE-2025-32386: a small archive that decompresses to far more than memory should hold.
func TestAdvisoryArchiveBombIsRefused(t *testing.T) {
	t.Parallel()
	data := bomb(t, 512<<20)
	repo := startRepo(t, indexFor("bomb", "1.0.0"), data)
	in := newTestInstaller(t, DefaultLimits())
	_, err := in.chart(context.Background(), Release{Chart: "bomb", RepoURL: repo.URL, Version: "1.0.0"})
	if err == nil || !strings.Contains(err.Error(), "larger than the maximum") {
		t.Fatalf("a %d-byte archive of 512 MiB = %v; want refused for its decompressed size", len(data), err)
	}
	t.Logf("a %d KiB archive decompressing to 512 MiB: %v", len(data)/1024, err)
}

// CVE-2025-55198: a Chart.yaml with a null maintainer or non-string import-values, and an
// index.yaml with an empty entry, once made Helm panic.
func TestAdvisoryMalformedYAMLIsAnErrorNotAPanic(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		meta    string
		refused bool
	}{
		"null maintainer":          {"apiVersion: v2\nname: demo\nversion: 1.0.0\nmaintainers:\n- null\n", true},
		"non-string import-values": {"apiVersion: v2\nname: demo\nversion: 1.0.0\ndependencies:\n- name: sub\n  version: 1.0.0\n  import-values:\n  - child: [1]\n    parent: {a: b}\n", false},
		"not YAML":                 {"apiVersion: v2\nname: [demo\n", true},
	} {
		t.Run(name, func(t *testing.T) {
			repo := startRepo(t, indexFor("demo", "1.0.0"), archive(t, "demo", map[string][]byte{"Chart.yaml": []byte(tc.meta)}))
			in := newTestInstaller(t, DefaultLimits())
			ch, err := in.chart(context.Background(), Release{Chart: "demo", RepoURL: repo.URL, Version: "1.0.0"})
			if tc.refused {
				if err == nil || strings.Contains(err.Error(), "malformed") {
					t.Errorf("= %v; want Helm's own clear refusal, not a recovered panic", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("= %v; want loaded (only helm lint read import-values this way)", err)
			}
			// Loaded: it must also survive what Ensure does next.
			if err := validateValues(context.Background(), ch, map[string]interface{}{}); err != nil {
				t.Errorf("values check: %v", err)
			}
		})
	}
	t.Run("empty index entry", func(t *testing.T) {
		index := "apiVersion: v1\nentries:\n  demo:\n  - null\n  -\n  - apiVersion: v2\n    name: demo\n    version: 1.0.0\n    urls:\n    - demo-1.0.0.tgz\n"
		repo := startRepo(t, []byte(index), archive(t, "demo", map[string][]byte{"Chart.yaml": chartYAML("demo", "1.0.0")}))
		in := newTestInstaller(t, DefaultLimits())
		if ch, err := in.chart(context.Background(), Release{Chart: "demo", RepoURL: repo.URL}); err != nil || ch.Metadata.Version != "1.0.0" {
			t.Errorf("index with empty entries = %v, %v; want the valid entry", ch, err)
		}
	})
}

func schemaChart(schema string) *chart.Chart {
	return &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "demo", Version: "1.0.0"}, Schema: []byte(schema),
		Values: map[string]interface{}{"a": "x"}}
}

// CVE-2025-32387: a schema nested without end, or a long chain of references, once exhausted the
// stack.
func TestAdvisorySchemaRecursionIsRefused(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"properties":{"a":`, 20000) + "{}" + strings.Repeat("}}", 20000)
	var chain strings.Builder
	chain.WriteString(`{"$ref":"#/definitions/d0","definitions":{`)
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&chain, `"d%d":{"$ref":"#/definitions/d%d"},`, i, i+1)
	}
	chain.WriteString(`"d5000":{}}}`)
	nested := strings.Repeat(`{"properties":{"a":`, 100) + "{}" + strings.Repeat("}}", 100)
	for name, schema := range map[string]string{"nesting": deep, "nesting within JSON's limit": nested, "reference chain": chain.String()} {
		err := validateValues(context.Background(), schemaChart(schema), nil)
		if err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s: %v; want refused", name, err)
		}
	}
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

// CVE-2025-55199: a schema's $ref to a device, a file or a URL once made Helm read it.
func TestAdvisorySchemaReferencesOutsideAreNeverFollowed(t *testing.T) {
	t.Parallel()
	srv, hits := schemaServer(t)
	for name, schema := range map[string]string{
		"device":        `{"$ref":"file:///dev/zero"}`,
		"token file":    `{"properties":{"a":{"$ref":"file:///var/run/secrets/kubernetes.io/serviceaccount/token"}}}`,
		"URL":           `{"properties":{"a":{"$ref":"` + srv.URL + `/schema.json"}}}`,
		"relative file": `{"properties":{"a":{"$ref":"other.json"}}}`,
		"meta-schema":   `{"$schema":"` + srv.URL + `/meta.json"}`,
	} {
		err := validateValues(context.Background(), schemaChart(schema), nil)
		if err == nil {
			t.Errorf("%s: accepted; want refused", name)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("the schema server was asked %d times; want never", hits.Load())
	}
	// A schema that keeps to itself still works, and still catches bad values.
	good := `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s"}}}`
	if err := validateValues(context.Background(), schemaChart(good), nil); err != nil {
		t.Errorf("a self-contained schema: %v", err)
	}
	if err := validateValues(context.Background(), schemaChart(good), map[string]interface{}{"a": 5}); err == nil || !strings.Contains(err.Error(), "do not match") {
		t.Errorf("values against a self-contained schema = %v; want a mismatch", err)
	}
}

// TestEnsureRefusesAChartWhoseSchemaReachesOut: through the install path, a chart whose schema
// points at a URL is refused before anything reaches the guest, and the URL is never asked.
func TestEnsureRefusesAChartWhoseSchemaReachesOut(t *testing.T) {
	t.Parallel()
	srv, hits := schemaServer(t)
	schema := `{"properties":{"a":{"$ref":"` + srv.URL + `/schema.json"}}}`
	repo := startRepo(t, indexFor("kube-vip", "1.0.0"), archive(t, "kube-vip", map[string][]byte{
		"Chart.yaml": chartYAML("kube-vip", "1.0.0"), "values.schema.json": []byte(schema),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\n"),
	}))
	c, kube := fakeGuest()
	in := newTestInstaller(t, DefaultLimits())
	_, err := in.Ensure(context.Background(), c, Release{Namespace: "kube-system", Name: "demo", Chart: "kube-vip", RepoURL: repo.URL, Version: "1.0.0",
		Plan: defaultPlan(t, "1.0.0")})
	if err == nil || !strings.Contains(err.Error(), "points outside the schema") {
		t.Errorf("Ensure = %v; want the schema refused", err)
	}
	if hits.Load() != 0 {
		t.Errorf("the schema's URL was asked %d times; want never", hits.Load())
	}
	if _, err := storage.Init(newBoundedSecrets(c.Core.Secrets("kube-system"), "kube-system", "demo")).Last("demo"); !errors.Is(err, driver.ErrReleaseNotFound) {
		t.Errorf("release after the refusal: %v; want none", err)
	}
	if w := writes(kube); len(w) > 0 {
		t.Errorf("the guest was written to: %v", w)
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
	_, err := in.chart(context.Background(), Release{Ref: ref, Version: "1.0.0"})
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
	p, err := installpolicy.Default().NewPlan(installpolicy.Kubevip, "values", version, nil, config.Default().Kubevip.Values)
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
