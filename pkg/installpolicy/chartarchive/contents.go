package chartarchive

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// CheckChart refuses, before anything renders, a chart package that is not the one asked for or
// that holds something Helm would apply without the judge seeing it: CRDs (crds/, applied before
// rendering), hook templates (created and run by Helm itself), or dependencies (subcharts with
// templates and values of their own). version is the version kube-fip-config asks for, "" for the
// newest. It returns nil or a *Refusal with ReasonChartRefused.
func CheckChart(chart guestchart.Chart, ch *helmchart.Chart, version string) error {
	deny := func(format string, args ...interface{}) error {
		return guestchart.Refuse(guestchart.ReasonChartRefused, "", "the %s chart %s", chart, fmt.Sprintf(format, args...))
	}
	if ch == nil || ch.Metadata == nil {
		return deny("has no Chart.yaml")
	}
	if ch.Metadata.Name != string(chart) {
		return deny("package is named %q: it is not the chart asked for", guestchart.Shorten(ch.Metadata.Name))
	}
	if version != "" && !sameVersion(ch.Metadata.Version, version) {
		return deny("package has version %q, not %s as asked", guestchart.Shorten(ch.Metadata.Version), version)
	}
	if ch.Metadata.Type != "" && ch.Metadata.Type != "application" {
		return deny("is of type %q, not an application chart", guestchart.Shorten(ch.Metadata.Type))
	}
	if len(ch.Metadata.Dependencies) > 0 || len(ch.Dependencies()) > 0 {
		return deny("has dependencies: subcharts are not installed")
	}
	for _, f := range ch.Files {
		if strings.HasPrefix(f.Name, "crds/") {
			return deny("holds %s: CRDs are not installed", guestchart.Shorten(f.Name))
		}
	}
	for _, t := range ch.Templates {
		if bytes.Contains(t.Data, []byte("helm.sh/hook")) {
			return deny("template %s names helm.sh/hook: hooks are not installed", guestchart.Shorten(t.Name))
		}
	}
	return nil
}

// sameVersion compares chart versions as SemVer, so that v0.9.9 asks for 0.9.9.
func sameVersion(have, want string) bool {
	h, err1 := semver.NewVersion(have)
	w, err2 := semver.NewVersion(want)
	if err1 != nil || err2 != nil {
		return have == want
	}
	return h.Equal(w)
}
