package installpolicy

import (
	"net/url"
	"strings"
	"testing"
)

// TestAllowsFetch: a redirect's target or an index's archive URL lies within an allowed chart
// source or a download location of the upstream source the chart comes from, and nowhere else.
func TestAllowsFetch(t *testing.T) {
	t.Parallel()
	def := Default()
	custom, err := New(Settings{ChartSources: []string{"https://charts.example.com/kube-vip", "oci://registry.example.com:5000"}})
	if err != nil {
		t.Fatal(err)
	}
	local, err := New(Settings{ChartSources: []string{"http://127.0.0.1:*", "oci://127.0.0.1:*"}, AllowHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	const pages, site, ghcr = "https://kube-vip.github.io/helm-charts", "https://kube-vip.io/helm-charts", "oci://ghcr.io/kube-vip/kube-vip"
	for _, tc := range []struct {
		policy       Policy
		from, target string
		allowed      bool
	}{
		// The upstream chain: index, release download on github.com, GitHub's asset hosts.
		{def, pages, "https://kube-vip.github.io/helm-charts/kube-vip-0.9.9.tgz", true},
		{def, site, "https://kube-vip.github.io/helm-charts/index.yaml", true},
		{def, pages, "https://github.com/kube-vip/helm-charts/releases/download/kube-vip-0.9.9/kube-vip-0.9.9.tgz", true},
		{def, site, "https://release-assets.githubusercontent.com/github-production-release-asset/1/a?sig=x", true},
		{def, pages, "https://objects.githubusercontent.com/github-production-release-asset-2e65be/1/a", true},
		{def, ghcr, "https://pkg-containers.githubusercontent.com/ghcr1/blobs/sha256:00", true},
		{def, ghcr, "https://ghcr.io/token?scope=repository:kube-vip/kube-vip:pull", true},
		// Elsewhere on those hosts, or on another scheme, or for another source: refused.
		{def, pages, "https://github.com/someone/helm-charts/releases/download/x/kube-vip-0.9.9.tgz", false},
		{def, pages, "https://github.com/kube-vip/helm-charts/releases/download/../../../someone/x.tgz", false},
		{def, pages, "https://github.com/kube-vip/helm-charts/releases/downloadx/x.tgz", false},
		{def, pages, "http://github.com/kube-vip/helm-charts/releases/download/x.tgz", false},
		{def, pages, "https://u:p@github.com/kube-vip/helm-charts/releases/download/x.tgz", false},
		{def, pages, "https://evil.example.com/kube-vip-0.9.9.tgz", false},
		{def, pages, "https://release-assets.githubusercontent.com.evil.example.com/a", false},
		{def, pages, "https://pkg-containers.githubusercontent.com/ghcr1/blobs/sha256:00", false},
		{def, ghcr, "https://release-assets.githubusercontent.com/github-production-release-asset/1/a", false},
		{def, "https://charts.example.com", "https://release-assets.githubusercontent.com/a", false},
		// A deployment's own sources are reached as they are allowed, and only those.
		{custom, "https://charts.example.com/kube-vip", "https://charts.example.com/kube-vip/x.tgz", true},
		{custom, "https://charts.example.com/kube-vip", "https://charts.example.com/other/x.tgz", false},
		{custom, "https://charts.example.com/kube-vip", "https://charts.example.com:8443/kube-vip/x.tgz", false},
		{custom, "oci://registry.example.com:5000/charts/kube-vip", "https://registry.example.com:5000/v2/charts/kube-vip/blobs/sha256:00", true},
		{custom, "oci://registry.example.com:5000/charts/kube-vip", "https://registry.example.com/v2/", false},
		{custom, "oci://registry.example.com:5000/charts/kube-vip", "http://registry.example.com:5000/v2/", false},
		{custom, "https://kube-vip.github.io/helm-charts", "https://github.com/kube-vip/helm-charts/releases/download/x.tgz", false},
		{local, "http://127.0.0.1:8080", "http://127.0.0.1:9090/index.yaml", true},
		{local, "oci://127.0.0.1:5000/charts/kube-vip", "http://127.0.0.1:5000/v2/", true},
		{Policy{}, pages, "https://kube-vip.github.io/helm-charts/index.yaml", false},
	} {
		target, err := url.Parse(tc.target)
		if err != nil {
			t.Fatal(err)
		}
		if got := tc.policy.Sources().AllowsFetch(tc.from, target); got != tc.allowed {
			t.Errorf("fetch of %s to %s allowed %v; want %v", tc.from, tc.target, got, tc.allowed)
		}
	}
}

// TestPolicyStringNamesTheDownloadLocations: the start-up log says where fetches may go besides
// the allowed sources.
func TestPolicyStringNamesTheDownloadLocations(t *testing.T) {
	t.Parallel()
	s := Default().String()
	for _, want := range []string{"https://github.com/kube-vip/helm-charts/releases/download", "https://release-assets.githubusercontent.com",
		"https://objects.githubusercontent.com", "https://pkg-containers.githubusercontent.com"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() lacks %s: %s", want, s)
		}
	}
	custom, err := New(Settings{ChartSources: []string{"https://charts.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if s := custom.String(); strings.Contains(s, "githubusercontent") {
		t.Errorf("a policy without the upstream sources names their download locations: %s", s)
	}
}
