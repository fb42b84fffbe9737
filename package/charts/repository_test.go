package charts

import (
	"bytes"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/repo"
)

// Rancher's icon rules, as read in rancher/rancher at v2.8.0 and at v2.15.0-alpha21-143-g59bd052e44
// (commit 59bd052e44553e77e5c570b84ed4a24dfa7b44ab), which agree on them:
//   - pkg/catalogv2/content/content.go, Manager.Icon: an icon whose URL scheme is not http or https
//     is read from the Git checkout when the repository has a commit (a Git repository); every
//     other icon is fetched over HTTP.
//   - pkg/catalogv2/git/content.go, relative: "file://" is cut off and the rest joined to the
//     checkout's root; HEAD refuses a path that leaves the checkout.
//   - pkg/catalogv2/http/download.go, Icon: an absolute URL is fetched as it is; a relative one is
//     resolved against the repository URL with a "/" put at the end of its path, keeping the
//     repository URL's query.
//   - pkg/catalogv2/http/client.go, shouldAttachBasicAuthHeader: the repository's credentials go
//     only to the repository's host and port (default port by scheme) or a subdomain of it.
// The helpers below state these rules; they are not Rancher's code.

// rancherIconIsHTTP tells whether Rancher fetches icon over HTTP rather than from a Git checkout.
func rancherIconIsHTTP(icon string) bool {
	u, err := url.Parse(icon)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https")
}

// rancherGitIconFile returns the file of the checkout at root that Rancher serves for icon.
func rancherGitIconFile(root, icon string) (string, bool) {
	rel := filepath.FromSlash(strings.TrimPrefix(icon, "file://"))
	return filepath.Join(root, rel), filepath.IsLocal(rel)
}

// rancherHTTPIcon returns the URL Rancher fetches for icon from the HTTP repository at repoURL and
// whether the repository's credentials go with the request.
func rancherHTTPIcon(t *testing.T, repoURL, icon string) (*url.URL, bool) {
	t.Helper()
	base, err := url.Parse(repoURL)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(icon)
	if err != nil {
		t.Fatalf("icon %q: %v", icon, err)
	}
	if !u.IsAbs() {
		b := *base
		b.Path = strings.TrimSuffix(b.Path, "/") + "/"
		u = b.ResolveReference(u)
		u.RawQuery = b.RawQuery
	}
	return u, originOf(u) == originOf(base) || strings.HasSuffix(originOf(u), "."+originOf(base))
}

// originOf is host:port, the port defaulted from the scheme.
func originOf(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// TestRancherHelpersFollowTheRules: the rule helpers tell a foreign host and an escaping path apart,
// so the icon tests below can fail.
func TestRancherHelpersFollowTheRules(t *testing.T) {
	if _, same := rancherHTTPIcon(t, "https://charts.example.com/kube-fip", "https://cdn.example.org/icon.svg"); same {
		t.Error("an icon on another host counts as the repository's origin")
	}
	if _, same := rancherHTTPIcon(t, "https://charts.example.com/kube-fip", "http://charts.example.com/icon.svg"); same {
		t.Error("an icon on port 80 counts as the origin of an https repository")
	}
	if u, same := rancherHTTPIcon(t, "https://charts.example.com/kube-fip?x=1", "icon.svg"); !same || u.String() != "https://charts.example.com/kube-fip/icon.svg?x=1" {
		t.Errorf("relative icon resolved to %s (same origin %v)", u, same)
	}
	if _, ok := rancherGitIconFile("/checkout", "file://../icon.svg"); ok {
		t.Error("an icon outside the checkout is accepted")
	}
	if rancherIconIsHTTP("file://charts/x/icon.svg") || !rancherIconIsHTTP("https://example.com/icon.svg") {
		t.Error("scheme rule wrong")
	}
}

// TestChartIconFromGitRepository: added as a Git repository, Rancher reads the operator chart's
// icon from the checkout: Chart.yaml names it with no http(s) scheme, and the path, joined to the
// checkout's root, stays inside it and is an SVG file git tracks (a checkout holds only those).
func TestChartIconFromGitRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	if rancherIconIsHTTP(c.Metadata.Icon) {
		t.Fatalf("icon %q: Rancher would fetch it over HTTP, not from the Git checkout", c.Metadata.Icon)
	}
	file, ok := rancherGitIconFile(root, c.Metadata.Icon)
	if !ok {
		t.Fatalf("icon %q leaves the checkout", c.Metadata.Icon)
	}
	rel, _ := filepath.Rel(root, file)
	tracked := false
	for _, f := range checkoutFiles(t, root) {
		tracked = tracked || f == filepath.ToSlash(rel)
	}
	if !tracked {
		t.Errorf("icon %s is not a file of the checkout", rel)
	}
	checkSVG(t, file)
}

// TestPackageRepository packages both charts as make package-helm does, once with relative URLs
// and once with --url: the index loads with Helm's repo package and holds the two charts at the
// version given, not a pre-release, each URL naming an archive written beside it; the operator
// chart's icon, fetched by Rancher's HTTP rules from the repository URL (with or without a slash
// at the end), is the SVG file served beside the index, on the repository's own origin.
func TestPackageRepository(t *testing.T) {
	for _, tc := range []struct {
		url      string
		repoURLs []string
	}{
		{"", []string{"https://charts.example.com/kube-fip", "https://charts.example.com/kube-fip/", "http://127.0.0.1:8080"}},
		{"https://charts.example.com/kube-fip/", []string{"https://charts.example.com/kube-fip", "https://charts.example.com/kube-fip/"}},
	} {
		t.Run("url="+tc.url, func(t *testing.T) {
			dest := t.TempDir()
			r, err := PackageRepository(RepositoryOptions{Version: "1.2.3", AppVersion: "v1.2.3", ChartsDir: filepath.Join("..", "..", "charts"), Dest: dest, URL: tc.url})
			if err != nil {
				t.Fatal(err)
			}
			index, err := repo.LoadIndexFile(filepath.Join(dest, IndexFile))
			if err != nil {
				t.Fatal(err)
			}
			if len(index.Entries) != 2 {
				t.Errorf("index has %d charts; want 2", len(index.Entries))
			}
			for _, name := range []string{CRDChart, OperatorChart} {
				cv, err := index.Get(name, "")
				if err != nil {
					t.Fatalf("%s: %v (Helm's latest-version lookup skips pre-releases)", name, err)
				}
				if v := semver.MustParse(cv.Version); v.String() != "1.2.3" || v.Prerelease() != "" || cv.AppVersion != "v1.2.3" {
					t.Errorf("%s version %s, appVersion %s; want 1.2.3, v1.2.3", name, cv.Version, cv.AppVersion)
				}
				if len(cv.URLs) != 1 {
					t.Fatalf("%s URLs %v", name, cv.URLs)
				}
				if want := tc.url + filepath.Base(r.Archives[name]); cv.URLs[0] != want {
					t.Errorf("%s URL %s; want %s", name, cv.URLs[0], want)
				}
			}
			icon := mustGet(t, index, OperatorChart).Icon
			if !rancherIconIsHTTP(icon) && strings.Contains(icon, ":") {
				t.Fatalf("index icon %q: neither http(s) nor relative; Rancher cannot fetch it from an HTTP repository", icon)
			}
			for _, repoURL := range tc.repoURLs {
				u, same := rancherHTTPIcon(t, repoURL, icon)
				if !same {
					t.Errorf("repository %s: icon %s is on another origin", repoURL, u)
				}
				base, _ := url.Parse(repoURL)
				rel, ok := strings.CutPrefix(u.Path, strings.TrimSuffix(base.Path, "/")+"/")
				if !ok || !filepath.IsLocal(rel) {
					t.Fatalf("repository %s: icon %s is not under the repository's path", repoURL, u)
				}
				checkSVG(t, filepath.Join(dest, filepath.FromSlash(path.Clean(rel))))
			}
		})
	}
}

func mustGet(t *testing.T, index *repo.IndexFile, name string) *repo.ChartVersion {
	t.Helper()
	cv, err := index.Get(name, "")
	if err != nil {
		t.Fatal(err)
	}
	return cv
}

// checkSVG checks that file is the operator chart's icon.
func checkSVG(t *testing.T, file string) {
	t.Helper()
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(chartDir(OperatorChart), "icon.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || !bytes.Contains(got, []byte("<svg")) {
		t.Errorf("%s is not the chart's SVG icon", file)
	}
}

// TestAutoInstallMustMatch: packaging refuses an operator chart whose auto-install annotation asks
// for a CRD chart version other than the one packaged with it, or names no chart packaged.
func TestAutoInstallMustMatch(t *testing.T) {
	crd := &chart.Chart{Metadata: &chart.Metadata{Name: CRDChart, Version: "1.2.3"}}
	operator := func(ann string) *chart.Chart {
		return &chart.Chart{Metadata: &chart.Metadata{Name: OperatorChart, Version: "1.2.3", Annotations: map[string]string{AutoInstallAnnotation: ann}}}
	}
	for ann, ok := range map[string]bool{
		CRDChart + "=match": true,
		CRDChart + "=1.2.3": true,
		CRDChart + "=1.2.4": false,
		"other-crd=match":   false,
		CRDChart:            false,
		"":                  false,
	} {
		err := checkAutoInstall(operator(ann), map[string]*chart.Chart{CRDChart: crd})
		if (err == nil) != ok {
			t.Errorf("annotation %q: %v; want accepted: %v", ann, err, ok)
		}
	}
	crd.Metadata.Version = "1.2.2"
	if err := checkAutoInstall(operator(CRDChart+"=match"), map[string]*chart.Chart{CRDChart: crd}); err == nil {
		t.Error("a CRD chart of another version is accepted for =match")
	}
}
