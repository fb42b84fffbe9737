package helminstall

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/outbound"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// archive packs files (paths below the chart's directory) as a chart archive.
func archive(t testing.TB, name string, files map[string][]byte) []byte {
	var packed [][2]string
	for path, data := range files {
		packed = append(packed, [2]string{name + "/" + path, string(data)})
	}
	return chartrepo.TarGzForTest(t, packed...)
}

func chartYAML(name, version string) []byte {
	return []byte(fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\n", name, version))
}

// repoServer is an HTTP chart repository serving fixed bytes, counting requests.
type repoServer struct {
	*httptest.Server
	index, archive []byte
	indexGets      atomic.Int32
	archiveGets    atomic.Int32
	// chunked sends without Content-Length, so only the read limit can stop a large body.
	chunked bool
}

func startRepo(t *testing.T, index, archive []byte) *repoServer {
	t.Helper()
	r := &repoServer{index: index, archive: archive}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body []byte
		switch {
		case req.URL.Path == "/index.yaml":
			r.indexGets.Add(1)
			body = r.index
		case strings.HasSuffix(req.URL.Path, ".tgz"):
			r.archiveGets.Add(1)
			body = r.archive
		default:
			http.NotFound(w, req)
			return
		}
		if !r.chunked {
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		}
		for len(body) > 0 {
			n := min(len(body), 32<<10)
			if _, err := w.Write(body[:n]); err != nil {
				return
			}
			if f, ok := w.(http.Flusher); ok && r.chunked {
				f.Flush()
			}
			body = body[n:]
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func indexFor(name, version string) []byte {
	return []byte(fmt.Sprintf("apiVersion: v1\nentries:\n  %s:\n  - apiVersion: v2\n    name: %s\n    version: %s\n    urls:\n    - %s-%s.tgz\n",
		name, name, version, name, version))
}

func testLimits() Limits {
	l := DefaultLimits()
	l.ConnectTimeout, l.FetchTimeout, l.Wait, l.FailureTTL = time.Second, 2*time.Second, 300*time.Millisecond, time.Minute
	return l
}

// planAllowing is the install policy's plan of the kube-vip chart at version with the default
// values, under a policy that allows the archives by digest besides the pinned ones.
func planAllowing(t testing.TB, version string, archives ...[]byte) *installpolicy.Plan {
	t.Helper()
	var digests []string
	for _, a := range archives {
		digests = append(digests, guestchart.Digest(a))
	}
	return planAllowingDigests(t, version, digests...)
}

// planAllowingDigests is planAllowing with the digests ("sha256:<hex>") of the kube-vip archives.
func planAllowingDigests(t testing.TB, version string, digests ...string) *installpolicy.Plan {
	t.Helper()
	for i, d := range digests {
		digests[i] = chartarchive.DigestEntry(guestchart.Kubevip, d)
	}
	s := installpolicy.DefaultSettings()
	s.ChartDigests = digests
	p, err := installpolicy.New(s)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.NewPlan(guestchart.Kubevip, "values", version, nil, config.Default().Kubevip.Values)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func newTestInstaller(t *testing.T, limits Limits) *Installer {
	t.Helper()
	in, err := NewInstaller(t.TempDir(), limits, outbound.Network{})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestStalledChartSourceHoldsUpOnlyItsOwnInstalls: a repository and a registry that accept
// connections and never answer. Asking them costs a caller at most Limits.Wait, during which a
// chart from a healthy repository is fetched at once (no lock is held across network I/O); the
// stalled fetches end with a timeout within Limits.FetchTimeout, and that failure is remembered
// rather than tried again by every caller.
func TestStalledChartSourceHoldsUpOnlyItsOwnInstalls(t *testing.T) {
	limits := testLimits()
	in := newTestInstaller(t, limits)
	ctx := context.Background()
	stalled := chartrepo.StallingServerForTest(t)
	healthy := chartrepo.ChartRepoForTest(t, chartrepo.KubevipChart("0.1.0"))
	served, err := chartrepo.Archive(chartrepo.KubevipChart("0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	plan := planAllowing(t, "0.1.0", served)

	sources := []Release{
		{Chart: "kube-vip", RepoURL: "http://" + stalled, Version: "0.1.0", Plan: plan},
		{Ref: "oci://" + stalled + "/charts/kube-vip", Version: "0.1.0", Plan: plan},
	}
	var wg sync.WaitGroup
	waits := make([]time.Duration, len(sources))
	errs := make([]error, len(sources))
	for i, rel := range sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			_, errs[i] = in.chart(ctx, rel)
			waits[i] = time.Since(start)
		}()
	}
	time.Sleep(50 * time.Millisecond) // the stalled fetches are under way
	start := time.Now()
	ch, err := in.chart(ctx, Release{Chart: "kube-vip", RepoURL: healthy.URL, Version: "0.1.0", Plan: plan})
	healthyTook := time.Since(start)
	if err != nil || ch.Chart.Metadata.Version != "0.1.0" {
		t.Fatalf("healthy repository while two sources stall = %v, %v", ch, err)
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, ErrChartPending) {
			t.Errorf("%s: first ask = %v; want ErrChartPending after Limits.Wait", sources[i].source(), err)
		}
		if waits[i] > limits.Wait+time.Second {
			t.Errorf("%s: the caller waited %s; want about Limits.Wait (%s)", sources[i].source(), waits[i], limits.Wait)
		}
	}
	if healthyTook > limits.Wait {
		t.Errorf("the healthy fetch took %s while other sources stalled", healthyTook)
	}

	// The stalled fetches end with a timeout, remembered for Limits.FailureTTL.
	for _, rel := range sources {
		var err error
		deadline := time.Now().Add(limits.FetchTimeout + 5*time.Second)
		for {
			_, err = in.chart(ctx, rel)
			if !errors.Is(err, ErrChartPending) || time.Now().After(deadline) {
				break
			}
		}
		if err == nil || errors.Is(err, ErrChartPending) || !strings.Contains(err.Error(), "timed out") {
			t.Errorf("%s after Limits.FetchTimeout = %v; want a timeout", rel.source(), err)
		}
		start := time.Now()
		if _, again := in.chart(ctx, rel); again == nil || errors.Is(again, ErrChartPending) || time.Since(start) > 100*time.Millisecond {
			t.Errorf("%s asked again = %v after %s; want the remembered failure at once", rel.source(), again, time.Since(start))
		}
	}
	t.Logf("healthy fetch %s while two sources stalled; callers of the stalled sources waited %s and %s", healthyTook, waits[0], waits[1])
}

// TestConcurrentInstallsShareOneFetch: twenty callers asking for one chart at once cause one
// index and one archive download.
func TestConcurrentInstallsShareOneFetch(t *testing.T) {
	t.Parallel()
	data := archive(t, "kube-vip", map[string][]byte{"Chart.yaml": chartYAML("kube-vip", "1.0.0")})
	repo := startRepo(t, indexFor("kube-vip", "1.0.0"), data)
	in := newTestInstaller(t, DefaultLimits())
	rel := Release{Chart: "kube-vip", RepoURL: repo.URL, Version: "1.0.0", Plan: planAllowing(t, "1.0.0", data)}
	var wg sync.WaitGroup
	var failures atomic.Int32
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ch, err := in.chart(context.Background(), rel); err != nil || ch.Chart.Metadata.Version != "1.0.0" {
				failures.Add(1)
			}
		}()
	}
	wg.Wait()
	if failures.Load() != 0 {
		t.Errorf("%d of 20 callers did not get the chart", failures.Load())
	}
	if repo.indexGets.Load() != 1 || repo.archiveGets.Load() != 1 {
		t.Errorf("20 callers caused %d index and %d archive downloads; want 1 and 1", repo.indexGets.Load(), repo.archiveGets.Load())
	}
}

// TestFetchSizeLimits: an index or an archive over its limit is refused, whether or not the
// server announces its length, and a cut body is never taken for a whole one.
func TestFetchSizeLimits(t *testing.T) {
	t.Parallel()
	small := archive(t, "kube-vip", map[string][]byte{"Chart.yaml": chartYAML("kube-vip", "1.0.0")})
	padding := "# " + strings.Repeat("x", 1<<20) + "\n"
	bigIndex := append(indexFor("kube-vip", "1.0.0"), padding...)
	bigArchive := archive(t, "kube-vip", map[string][]byte{"Chart.yaml": chartYAML("kube-vip", "1.0.0"), "random.txt": noise(1 << 20)})
	limits := DefaultLimits()
	limits.MaxIndexBytes, limits.MaxArchiveBytes = 512<<10, 512<<10
	for _, chunked := range []bool{false, true} {
		for _, tc := range []struct {
			what           string
			index, archive []byte
		}{
			{"index", bigIndex, small},
			{"archive", indexFor("kube-vip", "1.0.0"), bigArchive},
		} {
			repo := startRepo(t, tc.index, tc.archive)
			repo.chunked = chunked
			in := newTestInstaller(t, limits)
			_, err := in.chart(context.Background(), Release{Chart: "kube-vip", RepoURL: repo.URL, Version: "1.0.0",
				Plan: planAllowing(t, "1.0.0", small, bigArchive)})
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("%s over the limit (chunked %v) = %v; want ErrTooLarge", tc.what, chunked, err)
			}
		}
	}
}

// noise is incompressible bytes, so that an archive really is large.
func noise(n int) []byte {
	out := make([]byte, n)
	x := uint32(2463534242)
	for i := range out {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		out[i] = byte(x)
	}
	return out
}

// TestFetchRedirectsKeepTheirScheme: a redirect to another scheme is refused, allowed as a chart
// source or not: an https source never ends on plain http, nor an http one on https.
func TestFetchRedirectsKeepTheirScheme(t *testing.T) {
	t.Parallel()
	tlsServer := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tlsServer.Close()
	repo := httptest.NewServer(redirectTo(tlsServer.URL + "/index.yaml"))
	defer repo.Close()
	in := newTestInstaller(t, DefaultLimits())
	rel := Release{Chart: "demo", RepoURL: repo.URL, Version: "1.0.0", Sources: testPolicy(t, true, "http://127.0.0.1:*", "https://127.0.0.1:*")}
	if _, err := in.fetcher.fetch(context.Background(), rel); err == nil || !strings.Contains(err.Error(), "refused a redirect from http to https") {
		t.Errorf("fetch through a redirect to another scheme: %v; want it refused", err)
	}
}

// TestFetchChecksTheDigest: an archive that does not match the digest its index lists is refused.
func TestFetchChecksTheDigest(t *testing.T) {
	t.Parallel()
	data := archive(t, "kube-vip", map[string][]byte{"Chart.yaml": chartYAML("kube-vip", "1.0.0")})
	listed := strings.Repeat("0", 64)
	index := append(indexFor("kube-vip", "1.0.0"), []byte("    digest: "+listed+"\n")...)
	repo := startRepo(t, index, data)
	in := newTestInstaller(t, DefaultLimits())
	// Even with both digests allowed, the archive must be the one the index lists.
	plan := planAllowingDigests(t, "1.0.0", "sha256:"+listed, guestchart.Digest(data))
	_, err := in.chart(context.Background(), Release{Chart: "kube-vip", RepoURL: repo.URL, Version: "1.0.0", Plan: plan})
	if err == nil || !strings.Contains(err.Error(), "does not match the digest its repository lists") {
		t.Errorf("archive not matching its digest = %v; want refused", err)
	}
}
