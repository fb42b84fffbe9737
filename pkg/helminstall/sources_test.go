package helminstall

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v3/pkg/registry"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartsource"
)

// webHosts serves named origins from memory, so that a test reaches real host names, default
// ports and https without a network; it records the Authorization every request arrived with.
type webHosts struct {
	mu       sync.Mutex
	handlers map[string]http.Handler // by scheme://host[:port], as the request names it
	auth     map[string][]string     // by scheme://host[:port]/path
}

func newWebHosts() *webHosts {
	return &webHosts{handlers: map[string]http.Handler{}, auth: map[string][]string{}}
}

func (w *webHosts) handle(origins []string, h http.HandlerFunc) {
	for _, o := range origins {
		w.handlers[o] = h
	}
}

func (w *webHosts) RoundTrip(req *http.Request) (*http.Response, error) {
	origin := req.URL.Scheme + "://" + req.URL.Host
	w.mu.Lock()
	h, ok := w.handlers[origin]
	w.auth[origin+req.URL.Path] = append(w.auth[origin+req.URL.Path], req.Header.Get("Authorization"))
	w.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no host %s", origin)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// requests are the Authorization headers the requests for u arrived with; nil when none came.
func (w *webHosts) requests(u string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.auth[u]
}

// all are the URLs asked, in no order.
func (w *webHosts) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for u := range w.auth {
		out = append(out, u)
	}
	return out
}

func redirectTo(to string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, http.StatusFound) }
}

func serve(data []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(data) }
}

// indexListing is a repository index whose one entry lists its archive at archiveURL.
func indexListing(name, version, archiveURL string) []byte {
	return []byte(fmt.Sprintf("apiVersion: v1\nentries:\n  %s:\n  - apiVersion: v2\n    name: %s\n    version: %s\n    urls:\n    - %s\n",
		name, name, version, archiveURL))
}

func memoryInstaller(t *testing.T, hosts *webHosts) *Installer {
	t.Helper()
	in := newTestInstaller(t, testLimits())
	in.fetcher.base = hosts
	return in
}

func testPolicy(t *testing.T, allowHTTP bool, sources ...string) chartsource.Sources {
	t.Helper()
	p, err := chartsource.New(sources, allowHTTP)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	upstreamRelease = "https://github.com/kube-vip/helm-charts/releases/download/kube-vip-0.9.9/kube-vip-0.9.9.tgz"
	// signedQuery stands for the signature of a download URL, which no message may repeat.
	signedQuery = "?X-Amz-Signature=s1gnatur3"
)

// TestUpstreamDownloadsAreFollowed: the default install keeps working under the default policy.
// The upstream index lists its archives as GitHub release assets, which GitHub redirects to its
// asset host (either of the two it has used), and kube-vip.io may redirect to the github.io address.
func TestUpstreamDownloadsAreFollowed(t *testing.T) {
	t.Parallel()
	data := archive(t, "kube-vip", map[string][]byte{"Chart.yaml": chartYAML("kube-vip", "0.9.9")})
	for _, assets := range []string{"https://release-assets.githubusercontent.com", "https://objects.githubusercontent.com"} {
		hosts := newWebHosts()
		hosts.handle([]string{"https://kube-vip.io"}, redirectTo("https://kube-vip.github.io/helm-charts/index.yaml"))
		hosts.handle([]string{"https://kube-vip.github.io"}, serve(indexListing("kube-vip", "0.9.9", upstreamRelease)))
		hosts.handle([]string{"https://github.com"}, redirectTo(assets+"/github-production-release-asset/1/a"+signedQuery))
		hosts.handle([]string{assets}, serve(data))
		in := memoryInstaller(t, hosts)
		rel := Release{Chart: "kube-vip", RepoURL: "https://kube-vip.io/helm-charts", Version: "0.9.9", Sources: installpolicy.Default().Sources(),
			Credentials: &Credentials{Username: "u", Password: "S3CRET"}}
		if _, err := in.fetcher.fetch(context.Background(), rel); err != nil {
			t.Fatalf("upstream chain through %s: %v", assets, err)
		}
		for _, u := range []string{"https://kube-vip.github.io/helm-charts/index.yaml", "https://github.com" + strings.TrimPrefix(upstreamRelease, "https://github.com"),
			assets + "/github-production-release-asset/1/a"} {
			if got := hosts.requests(u); len(got) != 1 || got[0] != "" {
				t.Errorf("%s was asked with Authorization %q; want once, without", u, got)
			}
		}
	}
}

// TestUpstreamRegistryBlobRedirectIsFollowed: ghcr.io sends every blob download to its package
// storage; a pull from oci://ghcr.io/kube-vip follows, and the registry's credentials stay behind.
// The version is a range, chosen among the registry's tags.
func TestUpstreamRegistryBlobRedirectIsFollowed(t *testing.T) {
	t.Parallel()
	reg := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	hosts := newWebHosts()
	hosts.handle([]string{"https://ghcr.io"}, func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="ghcr.io"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			http.Redirect(w, r, "https://pkg-containers.githubusercontent.com/ghcr1"+r.URL.Path+signedQuery, http.StatusTemporaryRedirect)
			return
		}
		reg.ServeHTTP(w, r)
	})
	hosts.handle([]string{"https://pkg-containers.githubusercontent.com"}, func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path, r.URL.RawQuery = strings.TrimPrefix(r.URL.Path, "/ghcr1"), ""
		reg.ServeHTTP(w, r)
	})
	push, err := registry.NewClient(registry.ClientOptHTTPClient(&http.Client{Transport: hosts}),
		registry.ClientOptBasicAuth("u", "S3CRET"), registry.ClientOptWriter(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	data := archive(t, "kube-vip", map[string][]byte{"Chart.yaml": chartYAML("kube-vip", "0.9.9")})
	if _, err := push.Push(data, "ghcr.io/kube-vip/kube-vip:0.9.9"); err != nil {
		t.Fatal(err)
	}
	in := memoryInstaller(t, hosts)
	rel := Release{Ref: "oci://ghcr.io/kube-vip/kube-vip", Version: "~0.9", Sources: installpolicy.Default().Sources(),
		Credentials: &Credentials{Username: "u", Password: "S3CRET"}}
	if got, err := in.fetcher.fetch(context.Background(), rel); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("pull through the blob redirect: %v", err)
	}
	var registryAuth, storage int
	for u, auths := range hosts.auth {
		for _, a := range auths {
			switch {
			case strings.HasPrefix(u, "https://ghcr.io/") && a != "":
				registryAuth++
			case strings.HasPrefix(u, "https://pkg-containers.githubusercontent.com/"):
				storage++
				if a != "" {
					t.Errorf("%s got Authorization %q", u, a)
				}
			}
		}
	}
	if registryAuth == 0 || storage == 0 {
		t.Errorf("%d authenticated registry requests, %d blobs through the package storage; want both", registryAuth, storage)
	}
}

// TestRedirectOutsideTheAllowedSourcesIsRefused: a repository, or a download location, that
// redirects anywhere else is refused, and the message names the host without the query.
func TestRedirectOutsideTheAllowedSourcesIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, from, to string }{
		{"release download to another host", "https://github.com", "https://evil.example.com/kube-vip-0.9.9.tgz" + signedQuery},
		{"index to another repository on github.com", "https://kube-vip.github.io",
			"https://github.com/someone/helm-charts/releases/download/x/index.yaml" + signedQuery},
		{"index to a host that differs by a suffix", "https://kube-vip.github.io", "https://kube-vip.github.io.evil.example.com/helm-charts/index.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hosts := newWebHosts()
			hosts.handle([]string{"https://kube-vip.github.io"}, serve(indexListing("kube-vip", "0.9.9", upstreamRelease)))
			hosts.handle([]string{tc.from}, redirectTo(tc.to))
			target, _ := url.Parse(tc.to)
			hosts.handle([]string{"https://" + target.Host}, serve([]byte("apiVersion: v1\nentries: {}\n")))
			in := memoryInstaller(t, hosts)
			rel := Release{Chart: "kube-vip", RepoURL: "https://kube-vip.github.io/helm-charts", Version: "0.9.9", Sources: installpolicy.Default().Sources()}
			_, err := in.fetcher.fetch(context.Background(), rel)
			shown := "https://" + target.Host + target.Path
			if err == nil || !strings.Contains(err.Error(), "refused a redirect to "+shown) || strings.Contains(err.Error(), "s1gnatur3") {
				t.Errorf("fetch = %v; want the redirect to %s refused, without its query", err, shown)
			}
			if got := hosts.requests("https://" + target.Host + target.Path); got != nil {
				t.Errorf("the refused target was asked %d times", len(got))
			}
		})
	}
}

// TestRedirectCredentialsStayWithTheirOrigin: the credentials follow a redirect only to the same
// origin (chartsource.SameOrigin).
func TestRedirectCredentialsStayWithTheirOrigin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, repo, to string
		kept           bool
	}{
		{"explicit default port", "https://charts.example.com", "https://charts.example.com:443/v2/index.yaml", true},
		{"another port", "https://charts.example.com", "https://charts.example.com:8443/v2/index.yaml", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hosts := newWebHosts()
			hosts.handle([]string{"https://charts.example.com", "https://charts.example.com:443"}, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/index.yaml" {
					redirectTo(tc.to)(w, r)
					return
				}
				_, _ = w.Write([]byte("apiVersion: v1\nentries: {}\n"))
			})
			hosts.handle([]string{"https://charts.example.com:8443"}, serve([]byte("apiVersion: v1\nentries: {}\n")))
			in := memoryInstaller(t, hosts)
			rel := Release{Chart: "demo", RepoURL: tc.repo, Version: "1.0.0", Credentials: &Credentials{Username: "u", Password: "S3CRET"},
				Sources: testPolicy(t, false, "https://charts.example.com:*")}
			if _, err := in.fetcher.fetch(context.Background(), rel); err == nil || !strings.Contains(err.Error(), "has no chart demo") {
				t.Fatalf("fetch = %v; want the redirect followed to an empty index", err)
			}
			target, _ := url.Parse(tc.to)
			got := hosts.requests(target.Scheme + "://" + target.Host + target.Path)
			if len(got) != 1 || (got[0] != "") != tc.kept {
				t.Errorf("%s after a redirect from %s: Authorization %q; want it kept %v", tc.to, tc.repo, got, tc.kept)
			}
		})
	}
}

// TestIndexArchiveOutsideTheAllowedSourcesIsRefused: an index may list its archives only within
// the allowed sources and the download locations of the upstream source it belongs to.
func TestIndexArchiveOutsideTheAllowedSourcesIsRefused(t *testing.T) {
	t.Parallel()
	data := archive(t, "kube-vip", map[string][]byte{"Chart.yaml": chartYAML("kube-vip", "0.9.9")})
	custom := testPolicy(t, false, "https://charts.example.com")
	for _, tc := range []struct {
		name, repo, archive string
		policy              chartsource.Sources
	}{
		{"another host", "https://kube-vip.github.io/helm-charts", "https://evil.example.com/kube-vip-0.9.9.tgz" + signedQuery, installpolicy.Default().Sources()},
		{"another repository's releases", "https://kube-vip.github.io/helm-charts",
			"https://github.com/someone/charts/releases/download/x/kube-vip-0.9.9.tgz", installpolicy.Default().Sources()},
		{"upstream's download host for another source", "https://charts.example.com",
			"https://release-assets.githubusercontent.com/github-production-release-asset/1/a" + signedQuery, custom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, _ := url.Parse(tc.repo)
			target, _ := url.Parse(tc.archive)
			hosts := newWebHosts()
			hosts.handle([]string{"https://" + repo.Host}, serve(indexListing("kube-vip", "0.9.9", tc.archive)))
			hosts.handle([]string{"https://" + target.Host}, serve(data))
			in := memoryInstaller(t, hosts)
			rel := Release{Chart: "kube-vip", RepoURL: tc.repo, Version: "0.9.9", Sources: tc.policy}
			_, err := in.fetcher.fetch(context.Background(), rel)
			shown := "https://" + target.Host + target.Path
			if err == nil || !strings.Contains(err.Error(), "refused the archive "+shown) || strings.Contains(err.Error(), "s1gnatur3") {
				t.Errorf("fetch = %v; want the archive at %s refused, without its query", err, shown)
			}
			if got := hosts.requests(shown); got != nil {
				t.Errorf("the refused archive was asked %d times", len(got))
			}
		})
	}
}

// TestIndexArchiveCredentialsStayWithTheirOrigin: the index is read with the repository's
// credentials, and an archive it lists gets them only on the repository's origin
// (chartsource.SameOrigin).
func TestIndexArchiveCredentialsStayWithTheirOrigin(t *testing.T) {
	t.Parallel()
	data := archive(t, "demo", map[string][]byte{"Chart.yaml": chartYAML("demo", "1.0.0")})
	for _, tc := range []struct {
		archive string
		kept    bool
	}{
		{"https://charts.example.com:443/archives/demo-1.0.0.tgz", true},
		{"https://charts.example.com:8443/archives/demo-1.0.0.tgz", false},
	} {
		hosts := newWebHosts()
		hosts.handle([]string{"https://charts.example.com"}, serve(indexListing("demo", "1.0.0", tc.archive)))
		hosts.handle([]string{"https://charts.example.com:443", "https://charts.example.com:8443"}, serve(data))
		in := memoryInstaller(t, hosts)
		rel := Release{Chart: "demo", RepoURL: "https://charts.example.com", Version: "1.0.0",
			Credentials: &Credentials{Username: "u", Password: "S3CRET"}, Sources: testPolicy(t, false, "https://charts.example.com:*")}
		if _, err := in.fetcher.fetch(context.Background(), rel); err != nil {
			t.Fatalf("archive at %s: %v", tc.archive, err)
		}
		if got := hosts.requests(tc.archive); len(got) != 1 || (got[0] != "") != tc.kept {
			t.Errorf("archive at %s: Authorization %q; want it kept %v", tc.archive, got, tc.kept)
		}
		if got := hosts.requests("https://charts.example.com/index.yaml"); len(got) != 1 || got[0] == "" {
			t.Errorf("the index was read with Authorization %q; want the credentials", got)
		}
	}
}

// TestRegistryTokenServiceOutsideTheSourcesIsRefused: a registry names its token service itself
// (the Bearer realm of its 401), and oras-go follows any public realm with the registry's
// credentials. Every request of a fetch is checked against the allowed sources, so a realm on
// another host is refused and gets nothing, credentials least of all.
func TestRegistryTokenServiceOutsideTheSourcesIsRefused(t *testing.T) {
	t.Parallel()
	hosts := newWebHosts()
	hosts.handle([]string{"https://ghcr.io"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="https://tokens.evil.example/token",service="ghcr.io",scope="repository:kube-vip/kube-vip:pull"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	hosts.handle([]string{"https://tokens.evil.example"}, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"token":"t"}`))
	})
	in := memoryInstaller(t, hosts)
	rel := Release{Ref: "oci://ghcr.io/kube-vip/kube-vip", Version: "0.9.9", Sources: installpolicy.Default().Sources(),
		Credentials: &Credentials{Username: "u", Password: "S3CRET"}}
	_, err := in.fetcher.fetch(context.Background(), rel)
	if err == nil || !strings.Contains(err.Error(), "tokens.evil.example") {
		t.Fatalf("pull from a registry whose token service is elsewhere: %v; want a refusal naming the host", err)
	}
	if strings.Contains(err.Error(), "S3CRET") {
		t.Errorf("the refusal quotes the password: %v", err)
	}
	if got := hosts.requests("https://tokens.evil.example/token"); got != nil {
		t.Errorf("the token service outside the sources was asked %d times (Authorization %q)", len(got), got)
	}
	if hosts.requests("https://ghcr.io/v2/kube-vip/kube-vip/tags/list") == nil && len(hosts.auth) == 0 {
		t.Error("the registry itself was never asked: the test proves nothing")
	}
}
