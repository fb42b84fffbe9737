package chartrepo

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"net"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"sigs.k8s.io/yaml"
)

// Values are chart values written as YAML.
func Values(t testing.TB, text string) map[string]interface{} {
	t.Helper()
	out := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(text), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TarGzForTest packs files, a path and a content each, as a gzip'd tar: an archive of any shape,
// checked by nothing.
func TarGzForTest(t testing.TB, files ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ChartRepoForTest starts a chart repository serving charts and closes it when the test ends.
func ChartRepoForTest(t testing.TB, charts ...*chart.Chart) *ChartRepo {
	t.Helper()
	repo, err := StartChartRepo(charts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repo.Close() })
	return repo
}

// OCIRegistryForTest starts an empty OCI registry and closes it when the test ends.
func OCIRegistryForTest(t testing.TB) *OCIRegistry {
	t.Helper()
	oci, err := StartOCIRegistry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = oci.Close() })
	return oci
}

// StallingServerForTest listens on a loopback port, accepts every connection and never answers,
// as a hung chart repository or registry does; it returns the address (host:port) and closes
// everything when the test ends.
func StallingServerForTest(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}
