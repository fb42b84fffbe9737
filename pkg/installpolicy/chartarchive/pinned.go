package chartarchive

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// PinnedChart is a chart archive that is part of the product: the upstream archive of the pinned
// version, known by its digest. The release image carries it (DefaultGuestChartsDir), and it is
// installed without being fetched when kube-fip-config asks for it from the upstream repository.
type PinnedChart struct {
	Chart   guestchart.Chart
	Version string
	// Digest is "sha256:<hex>" of the archive, as kube-vip's published index lists it.
	Digest string
	// URL is where upstream publishes the archive.
	URL string
}

// File is the archive's file name, as upstream names it and as the image holds it.
func (pc PinnedChart) File() string { return fmt.Sprintf("%s-%s.tgz", pc.Chart, pc.Version) }

// PinnedCharts are the archives of the pinned pair (pkg/config's DefaultKubevipChartVersion and
// DefaultKubevipCloudProviderChartVersion), with the sha256 digests kube-vip/helm-charts' index
// (branch gh-pages) lists for them. Changing the pair changes these in the same reviewed change.
func PinnedCharts() []PinnedChart {
	const releases = "https://github.com/kube-vip/helm-charts/releases/download/"
	return []PinnedChart{
		{Chart: guestchart.Kubevip, Version: "0.9.9",
			Digest: "sha256:106dc112b119abdbac82ea4be13dc8d815028972d101a45bd7a448d68611f1f6",
			URL:    releases + "kube-vip-0.9.9/kube-vip-0.9.9.tgz"},
		{Chart: guestchart.CloudProvider, Version: "0.2.10",
			Digest: "sha256:6a9c9d7540cd3d7a4ebfaf205c4df07c809b19b463e6a764d59c011387d2695e",
			URL:    releases + "kube-vip-cloud-provider-0.2.10/kube-vip-cloud-provider-0.2.10.tgz"},
	}
}

// Pinned is the pinned archive of chart.
func Pinned(chart guestchart.Chart) (PinnedChart, bool) {
	for _, pc := range PinnedCharts() {
		if pc.Chart == chart {
			return pc, true
		}
	}
	return PinnedChart{}, false
}

// upstreamRepositories are the Helm repositories that publish the pinned archives: kube-vip.io
// serves the same index as its GitHub Pages address, listing the same release assets.
func upstreamRepositories() []string {
	return []string{"https://kube-vip.io/helm-charts", "https://kube-vip.github.io/helm-charts"}
}

// ServedByPinned reports whether the pinned archive of chart is what kube-fip-config asks for: the
// pinned version (or none, which means it) from an upstream Helm repository. The archive the
// product ships is then installed, and nothing is fetched.
func ServedByPinned(chart guestchart.Chart, repoURL, ref, version string) bool {
	pc, ok := Pinned(chart)
	if !ok || ref != "" || (version != "" && !sameVersion(version, pc.Version)) {
		return false
	}
	u, err := url.Parse(strings.TrimSuffix(repoURL, "/"))
	if err != nil || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	return slices.ContainsFunc(upstreamRepositories(), func(up string) bool {
		w, _ := url.Parse(up)
		return strings.EqualFold(u.Scheme, w.Scheme) && strings.EqualFold(u.Host, w.Host) && path.Clean(u.Path) == w.Path
	})
}

// DigestEntry is one entry of the deployment's allowed chart digests, as the flag takes it.
func DigestEntry(chart guestchart.Chart, digest string) string { return string(chart) + "@" + digest }

// parseDigestEntry reads "<chart>@sha256:<64 hex>" for one of the charts the operator installs.
func parseDigestEntry(raw string) (guestchart.Chart, string, error) {
	name, digest, ok := strings.Cut(raw, "@")
	if !ok {
		return "", "", errors.New("must be <chart>@sha256:<64 hex digits>, such as kube-vip@sha256:" + strings.Repeat("0", 8) + "…")
	}
	chart := guestchart.Chart(name)
	if !slices.Contains(guestchart.Charts(), chart) {
		return "", "", fmt.Errorf("names chart %q; the charts installed are %s and %s", guestchart.Shorten(name), guestchart.Kubevip, guestchart.CloudProvider)
	}
	hexPart, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hexPart) != sha256.Size*2 || strings.ToLower(hexPart) != hexPart {
		return "", "", errors.New("the digest must be sha256: followed by 64 lower-case hex digits")
	}
	if _, err := hex.DecodeString(hexPart); err != nil {
		return "", "", errors.New("the digest must be sha256: followed by 64 lower-case hex digits")
	}
	return chart, digest, nil
}

// Archives are the chart archives the deployment trusts: the pinned ones, and those it allows by
// digest for a chart (allowed-chart-digests). It keeps the packages it loaded last, shared by
// every copy. The zero Archives trust the pinned archives only, and keep none.
type Archives struct {
	digests  map[guestchart.Chart][]string
	packages *packageCache
}

// New reads the deployment's allowed chart digests, "<chart>@sha256:<hex>" each. Empty entries
// are skipped; a malformed one is an error naming it.
func New(list []string) (Archives, error) {
	out := map[guestchart.Chart][]string{}
	for _, raw := range list {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		chart, digest, err := parseDigestEntry(raw)
		if err != nil {
			return Archives{}, fmt.Errorf("allowed chart digest %q: %w", guestchart.Shorten(raw), err)
		}
		out[chart] = append(out[chart], digest)
	}
	return Archives{digests: out, packages: &packageCache{}}, nil
}

// CheckDigest returns nil when an archive of chart with digest may be loaded and rendered: the
// pinned archive, or one the deployment allows for that chart (allowed-chart-digests). Otherwise
// it returns a *Refusal with ReasonChartRefused naming the digest and how to allow it.
func (a Archives) CheckDigest(chart guestchart.Chart, digest string) error {
	pc, pinned := Pinned(chart)
	if (pinned && pc.Digest == digest) || slices.Contains(a.digests[chart], digest) {
		return nil
	}
	what := "the pinned one"
	if pinned {
		what = fmt.Sprintf("that of the pinned %s %s (%s)", chart, pc.Version, pc.Digest)
	}
	return guestchart.Refuse(guestchart.ReasonChartRefused, "", "the %s chart archive has digest %s, which is neither %s nor allowed by the deployment: "+
		"nothing of it is loaded or rendered. To install it, review the archive and add %s to security.allowedChartDigests (--allowed-chart-digests)",
		chart, guestchart.Shorten(digest), what, guestchart.Shorten(DigestEntry(chart, digest)))
}

// String lists the allowed archives, for the start-up log.
func (a Archives) String() string {
	var out []string
	for chart, list := range a.digests {
		for _, d := range list {
			out = append(out, DigestEntry(chart, d))
		}
	}
	sort.Strings(out)
	return "chart archives: the pinned ones and [" + strings.Join(out, " ") + "]"
}
