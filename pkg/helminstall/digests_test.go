package helminstall

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// TestOnlyAllowedDigestsAreLoaded: a repository's archive is loaded only when its digest is pinned
// or allowed for the chart. One whose listed digest is not allowed is not even downloaded; one
// listed without a digest is downloaded and refused before anything of it is unpacked; the newest
// version, asked for without one, is as good as its digest.
func TestOnlyAllowedDigestsAreLoaded(t *testing.T) {
	t.Parallel()
	allowed := archive(t, "kube-vip", map[string][]byte{"Chart.yaml": chartYAML("kube-vip", "0.9.9")})
	newer := archive(t, "kube-vip", map[string][]byte{"Chart.yaml": chartYAML("kube-vip", "0.9.10")})
	listing := func(digests bool) []byte {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nentries:\n  kube-vip:\n")
		for _, e := range []struct {
			version string
			data    []byte
		}{{"0.9.10", newer}, {"0.9.9", allowed}} {
			fmt.Fprintf(&b, "  - name: kube-vip\n    version: %s\n    urls: [kube-vip-%s.tgz]\n", e.version, e.version)
			if digests {
				fmt.Fprintf(&b, "    digest: %s\n", strings.TrimPrefix(guestchart.Digest(e.data), "sha256:"))
			}
		}
		return []byte(b.String())
	}
	for _, tc := range []struct {
		name      string
		digests   bool
		version   string
		want      string // "" for loaded
		downloads int32
	}{
		{"the allowed version", true, "0.9.9", "", 1},
		{"another version, listed with its digest", true, "0.9.10", "neither that of the pinned", 0},
		{"another version, listed without a digest", false, "0.9.10", "neither that of the pinned", 1},
		{"the newest, which is not allowed", true, "", "neither that of the pinned", 0},
		{"a range whose newest is not allowed", true, "~0.9", "neither that of the pinned", 0},
		{"a range whose newest is allowed", true, "<0.9.10", "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := startRepo(t, listing(tc.digests), nil)
			if tc.version == "0.9.9" || tc.version == "<0.9.10" {
				repo.archive = allowed
			} else {
				repo.archive = newer
			}
			in := newTestInstaller(t, DefaultLimits())
			version := tc.version
			if strings.HasPrefix(version, "<") || strings.HasPrefix(version, "~") {
				version = ""
			}
			rel := Release{Chart: "kube-vip", RepoURL: repo.URL, Version: tc.version, Plan: planAllowing(t, version, allowed)}
			pkg, err := in.chart(context.Background(), rel)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("= %v; want the allowed chart", err)
			case tc.want == "" && pkg.Digest != guestchart.Digest(allowed):
				t.Errorf("= %s; want the allowed archive", pkg.Digest)
			case tc.want != "":
				var refused *guestchart.Refusal
				if !errors.As(err, &refused) || refused.Reason != guestchart.ReasonChartRefused || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("= %v; want ChartRefused saying %q", err, tc.want)
				}
			}
			if got := repo.archiveGets.Load(); got != tc.downloads {
				t.Errorf("the archive was downloaded %d times; want %d", got, tc.downloads)
			}
		})
	}
}

// TestBundledChartIsInstalledWithoutAFetch: with the pinned archive bundled, kube-fip-config's
// default source and version (or no version) install it and nothing is asked of any source;
// another version or source is fetched.
func TestBundledChartIsInstalledWithoutAFetch(t *testing.T) {
	t.Parallel()
	standIn := chartrepo.KubevipChart(config.DefaultKubevipChartVersion)
	dir := t.TempDir()
	if _, err := chartrepo.WriteArchive(standIn, dir); err != nil {
		t.Fatal(err)
	}
	s := installpolicy.DefaultSettings()
	s.ChartDigests = chartrepo.DigestEntries(standIn)
	policy, err := installpolicy.New(s)
	if err != nil {
		t.Fatal(err)
	}
	bundle, notes, err := policy.Archives().LoadBundle(dir)
	if err != nil || bundle.For(guestchart.Kubevip, config.Default().Kubevip.RepoURL, "", "") == nil {
		t.Fatalf("LoadBundle = %v, %v; want the kube-vip stand-in", notes, err)
	}
	hosts := newWebHosts()
	in := memoryInstaller(t, hosts)
	in.UseBundle(bundle)
	for _, version := range []string{config.DefaultKubevipChartVersion, ""} {
		plan, err := policy.NewPlan(guestchart.Kubevip, "values", version, nil, config.Default().Kubevip.Values)
		if err != nil {
			t.Fatal(err)
		}
		for _, source := range []string{config.Default().Kubevip.RepoURL, "https://kube-vip.github.io/helm-charts/"} {
			pkg, err := in.chart(context.Background(), Release{Chart: "kube-vip", RepoURL: source, Version: version, Plan: plan, Sources: policy.Sources()})
			if err != nil || pkg.Digest != chartrepo.Digest(standIn) {
				t.Errorf("%s at %q = %v, %v; want the bundled stand-in", source, version, pkg, err)
			}
		}
	}
	if got := hosts.all(); len(got) != 0 {
		t.Errorf("the bundled chart cost requests: %v", got)
	}
	// Another version is fetched (and here, from nowhere, fails).
	plan, err := policy.NewPlan(guestchart.Kubevip, "values", "0.9.8", nil, config.Default().Kubevip.Values)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.fetcher.fetch(context.Background(), Release{Chart: "kube-vip", RepoURL: config.Default().Kubevip.RepoURL, Version: "0.9.8",
		Plan: plan, Sources: policy.Sources()}); err == nil {
		t.Error("kube-vip 0.9.8 was found without a fetch")
	}
	if got := hosts.all(); len(got) == 0 {
		t.Error("another version was not fetched")
	}
}
