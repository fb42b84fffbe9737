package installpolicy

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartsource"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
)

func chartFrom(t *testing.T, repo, ref, values string) config.Config {
	t.Helper()
	data := map[string]string{}
	if repo != "" {
		data[config.KeyKubevipChartRepoURL] = repo
	}
	if ref != "" {
		data[config.KeyKubevipChartRef], data[config.KeyKubevipChartVersion] = ref, "1.0.0"
	}
	if values != "" {
		data[config.KeyKubevipChartValues] = values
	}
	c, problems := config.Parse(data, config.Default())
	if len(problems) != 0 {
		t.Fatalf("config has problems: %v", problems)
	}
	return c
}

func refusal(t *testing.T, err error) *guestchart.Refusal {
	t.Helper()
	var r *guestchart.Refusal
	if err != nil && !errors.As(err, &r) {
		t.Fatalf("not a *Refusal: %v", err)
	}
	return r
}

// TestDefaultPolicyAllowsTheDefaults: the built-in configuration installs under the built-in
// policy, so a deployment that sets nothing keeps working.
func TestDefaultPolicyAllowsTheDefaults(t *testing.T) {
	t.Parallel()
	p := Default()
	if problems := p.Check(config.Default()); len(problems) != 0 {
		t.Fatalf("the default config is refused: %v", problems)
	}
	for _, ref := range []string{"oci://ghcr.io/kube-vip/kube-vip", "oci://ghcr.io/kube-vip/charts/kube-vip-cloud-provider"} {
		if err := checkKubevip(p, chartFrom(t, "", ref, "")); err != nil {
			t.Errorf("%s: %v", ref, err)
		}
	}
	if err := checkKubevip(p, chartFrom(t, "https://kube-vip.github.io/helm-charts/", "", "")); err != nil {
		t.Errorf("upstream repository with a trailing slash: %v", err)
	}
}

// TestPolicyRefusesSourcesOutsideTheAllowList: whoever can edit kube-fip-config cannot point the
// operator at another repository or registry, also not by tricks on host, port or path.
func TestPolicyRefusesSourcesOutsideTheAllowList(t *testing.T) {
	t.Parallel()
	p := Default()
	for _, tt := range []struct{ repo, ref string }{
		{repo: "https://charts.attacker.example/kube-vip"},
		{repo: "https://kube-vip.io.attacker.example/helm-charts"},
		{repo: "https://kube-vip.io:8443/helm-charts"},
		{repo: "https://kube-vip.io/helm-charts-evil"},
		{repo: "https://kube-vip.io/helm-charts/../evil"},
		{repo: "https://kube-vip.io/other"},
		{ref: "oci://ghcr.io/attacker/kube-vip"},
		{ref: "oci://ghcr.io/kube-vip-evil/kube-vip"},
		{ref: "oci://ghcr.io.attacker.example/kube-vip/kube-vip"},
	} {
		c := chartFrom(t, tt.repo, tt.ref, "")
		r := refusal(t, checkKubevip(p, c))
		if r == nil {
			t.Errorf("%s%s: allowed", tt.repo, tt.ref)
			continue
		}
		wantKey := config.KeyKubevipChartRepoURL
		if tt.ref != "" {
			wantKey = config.KeyKubevipChartRef
		}
		if r.Reason != guestchart.ReasonSourceNotAllowed || r.Key != wantKey || !strings.Contains(r.Error(), "allowed chart sources") {
			t.Errorf("%s%s: refusal %+v", tt.repo, tt.ref, r)
		}
		// The repository URL is shared: the cloud provider is refused as well.
		if tt.repo != "" && checkProvider(p, c) == nil {
			t.Errorf("%s: the cloud provider chart is allowed", tt.repo)
		}
		problems := p.Check(c)
		if len(problems) == 0 || !problems[0].Warning || problems[0].Reason != guestchart.ReasonSourceNotAllowed ||
			!strings.Contains(problems[0].Error(), "nothing is installed") {
			t.Errorf("%s%s: Check = %v", tt.repo, tt.ref, problems)
		}
	}
}

// TestPolicyHTTPOnlyWithTheFlag: plain http repositories, and OCI registries on a loopback host
// (reached over plain http), are refused unless the deployment allows http.
func TestPolicyHTTPOnlyWithTheFlag(t *testing.T) {
	t.Parallel()
	sources := []string{"http://charts.lab.example", "https://charts.lab.example", "oci://127.0.0.1:*"}
	if _, err := New(Settings{ChartSources: sources}); err == nil {
		t.Error("an http allow-list entry without allow-http is accepted")
	}
	strict, err := New(Settings{ChartSources: []string{"https://charts.lab.example", "https://kube-vip.io"}, KubevipImages: imagepolicy.DefaultKubevipImages()})
	if err != nil {
		t.Fatal(err)
	}
	loose, err := New(Settings{ChartSources: sources, AllowHTTP: true, KubevipImages: imagepolicy.DefaultKubevipImages()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []config.Config{
		chartFrom(t, "http://charts.lab.example/kv", "", ""),
		chartFrom(t, "http://kube-vip.io/helm-charts", "", ""),
	} {
		r := refusal(t, checkKubevip(strict, c))
		if r == nil || r.Reason != guestchart.ReasonSourceNotAllowed || !strings.Contains(r.Message, "plain http") {
			t.Errorf("%s: want a plain-http refusal, got %v", c.Kubevip.RepoURL, r)
		}
	}
	if err := checkKubevip(loose, chartFrom(t, "http://charts.lab.example/kv", "", "")); err != nil {
		t.Errorf("http with the flag and an http entry: %v", err)
	}
	if err := checkKubevip(loose, chartFrom(t, "https://charts.lab.example/kv", "", "")); err != nil {
		t.Errorf("https entry: %v", err)
	}
	if err := checkKubevip(loose, chartFrom(t, "", "oci://127.0.0.1:5000/charts/kube-vip", "")); err != nil {
		t.Errorf("loopback registry with any port: %v", err)
	}
	// An https entry does not allow the same host over http, even with the flag.
	if checkKubevip(loose, chartFrom(t, "http://kube-vip.io/helm-charts", "", "")) == nil {
		t.Error("http source allowed by no http entry")
	}
	r := refusal(t, checkKubevip(strict, chartFrom(t, "", "oci://127.0.0.1:5000/charts/kube-vip", "")))
	if r == nil || !strings.Contains(r.Message, "plain http") {
		t.Errorf("loopback OCI registry without allow-http: %v", r)
	}
}

// TestPolicyNeverEchoesCredentials: a Config built by hand with credentials in the URL is
// refused without repeating them.
func TestPolicyNeverEchoesCredentials(t *testing.T) {
	t.Parallel()
	c := config.Default()
	c.Kubevip.RepoURL = "https://user:S3CRET@kube-vip.io/helm-charts"
	c.KubevipCloudProvider.Ref = "oci://robot:S3CRET@ghcr.io/kube-vip/x?token=S3CRET"
	for _, err := range []error{checkKubevip(Default(), c), checkProvider(Default(), c)} {
		if err == nil || strings.Contains(err.Error(), "S3CRET") || !strings.Contains(err.Error(), "credentials") {
			t.Errorf("refusal %v", err)
		}
	}
}

func TestNewRejectsBadEntries(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		"ftp://x", "kube-vip.io/helm-charts", "https://user:S3CRET@kube-vip.io", "https://kube-vip.io/x?token=S3CRET",
		"https://:443/x", "https://kube-vip.io:port/x", "https://*.example.com",
	} {
		_, err := New(Settings{ChartSources: []string{bad}, AllowHTTP: true})
		if err == nil {
			t.Errorf("%q: accepted", bad)
		} else if strings.Contains(err.Error(), "S3CRET") {
			t.Errorf("%q: error repeats credentials: %v", bad, err)
		}
	}
	for _, image := range []string{"Not An Image", "ghcr.io/kube-vip/kube-vip:v1.0.0", "ghcr.io/kube-vip/kube-vip@sha256:00"} {
		if _, err := New(Settings{KubevipImages: []string{image}}); err == nil {
			t.Errorf("the allowed image %q is accepted: an entry is a repository, without tag or digest", image)
		}
	}
	p, err := New(Settings{ChartSources: []string{" ", ""}, KubevipImages: []string{""}})
	if err != nil {
		t.Fatal(err)
	}
	if checkKubevip(p, config.Default()) == nil {
		t.Error("an empty allow-list allows the default source")
	}
}

// checkKubevip and checkProvider are the plans' refusals of the charts of c.
func checkKubevip(p Policy, c config.Config) error {
	_, err := p.PlanKubevip(c)
	return err
}

func checkProvider(p Policy, c config.Config) error {
	_, err := p.PlanCloudProvider(c)
	return err
}

// TestOrigins: an origin is scheme, host and port, a port left out being the scheme's default;
// localhost and loopback addresses, bracketed or not, are this machine's.
func TestOrigins(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"https://h.example.com", "https://h.example.com:443/x", true},
		{"oci://registry.example.com", "oci://registry.example.com:443/charts/kube-vip", true},
		{"http://h.example.com:80", "http://H.example.com/", true},
		{"oci://registry.example.com:5000", "oci://registry.example.com:5000/charts", true},
		{"https://h.example.com", "http://h.example.com", false},
		{"https://h.example.com", "oci://h.example.com", false},
		{"https://h.example.com", "https://h.example.com:8443", false},
		{"oci://registry.example.com:5000", "oci://registry.example.com/charts", false},
		{"https://h.example.com", "https://h.example.com.evil.example", false},
		{"", "", false},
	} {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if got := chartsource.SameOrigin(a, b); got != tc.same {
			t.Errorf("SameOrigin(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
	for host, want := range map[string]bool{"localhost": true, "LocalHost": true, "127.0.0.2": true, "::1": true, "[::1]": true,
		"127.0.0.1.example.com": false, "registry.example.com": false, "10.0.0.1": false, "": false} {
		if got := chartsource.Loopback(host); got != want {
			t.Errorf("Loopback(%q) = %v", host, got)
		}
	}
}
