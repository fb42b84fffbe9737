package chartsource

import (
	"net/url"
	"slices"
	"strings"
)

// download is where a fetch of a chart at or below from may go besides the allowed chart sources:
// a redirect's target, or an archive the repository's index lists.
type download struct {
	from source
	to   []source
}

// upstreamDownloads are the places the upstream kube-vip sources hand a fetch on to. They are no
// chart sources: kube-fip-config cannot name them, a fetch from any other source never goes there,
// and credentials never follow a fetch there (they stay with their own scheme, host and port).
func upstreamDownloads() []download {
	github := []source{
		// chart-releaser publishes the archives as release assets of kube-vip/helm-charts, and the
		// index lists them there, on github.com, under this repository's path only ...
		{scheme: "https", host: "github.com", path: "/kube-vip/helm-charts/releases/download"},
		// ... which answers each download with a redirect to a short-lived signed URL on GitHub's
		// asset host: release-assets since 2025, objects before (and still for older assets).
		{scheme: "https", host: "release-assets.githubusercontent.com"},
		{scheme: "https", host: "objects.githubusercontent.com"},
	}
	pages := source{scheme: "https", host: "kube-vip.github.io", path: "/helm-charts"}
	site := source{scheme: "https", host: "kube-vip.io", path: "/helm-charts"}
	return []download{
		// GitHub Pages redirects a project's github.io address to its owner's custom domain, so
		// either address of the repository may send a fetch to the other.
		{from: site, to: append([]source{pages}, github...)},
		{from: pages, to: append([]source{site}, github...)},
		// ghcr.io redirects every blob download to its package storage.
		{from: source{scheme: "oci", host: "ghcr.io", path: "/kube-vip"},
			to: []source{{scheme: "https", host: "pkg-containers.githubusercontent.com"}}},
	}
}

// AllowsFetch reports whether a fetch of the chart at chartSource (a repository URL or an oci://
// reference) may read target: a redirect's target, or an archive the repository's index lists.
// Those are the repository's or registry's choice, not the deployment's, so each must lie within
// an allowed chart source or a download location of the upstream source chartSource lies under.
// An oci:// entry stands for its registry's whole origin, where the registry API and its token
// service answer. Sources is the guest fetcher's helminstall.Sources.
func (ss Sources) AllowsFetch(chartSource string, target *url.URL) bool {
	if target == nil || target.User != nil || (target.Scheme != "https" && target.Scheme != "http") {
		return false
	}
	t := sourceOf(target)
	if t.host == "" || (t.scheme == "http" && !ss.allowHTTP) {
		return false
	}
	for _, s := range ss.sources {
		if s.scheme == "oci" {
			if t.scheme == "http" && !Loopback(s.host) {
				continue
			}
			s = source{scheme: t.scheme, host: s.host, port: s.port}
		}
		if s.allows(t) {
			return true
		}
	}
	u, err := url.Parse(chartSource)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	from := sourceOf(u)
	if !ss.allows(from) {
		return false
	}
	return slices.ContainsFunc(ss.downloads, func(d download) bool {
		return d.from.allows(from) && slices.ContainsFunc(d.to, func(to source) bool { return to.allows(t) })
	})
}

// downloadsText lists the download locations of the allowed upstream sources.
func (ss Sources) downloadsText() string {
	var out []string
	for _, d := range ss.downloads {
		if !ss.allows(d.from) {
			continue
		}
		for _, to := range d.to {
			if s := to.String(); !slices.Contains(out, s) && !ss.allows(to) {
				out = append(out, s)
			}
		}
	}
	return strings.Join(out, " ")
}
