package config

import (
	"errors"
	"strings"
	"testing"
)

func chartFrom(t *testing.T, repo, ref, values string) Config {
	t.Helper()
	data := map[string]string{}
	if repo != "" {
		data[KeyKubevipChartRepoURL] = repo
	}
	if ref != "" {
		data[KeyKubevipChartRef], data[KeyKubevipChartVersion] = ref, "1.0.0"
	}
	if values != "" {
		data[KeyKubevipChartValues] = values
	}
	c, problems := Parse(data, Default())
	if len(problems) != 0 {
		t.Fatalf("config has problems: %v", problems)
	}
	return c
}

func refusal(t *testing.T, err error) *Refusal {
	t.Helper()
	var r *Refusal
	if err != nil && !errors.As(err, &r) {
		t.Fatalf("not a *Refusal: %v", err)
	}
	return r
}

// TestDefaultPolicyAllowsTheDefaults: the built-in configuration installs under the built-in
// policy, so a deployment that sets nothing keeps working.
func TestDefaultPolicyAllowsTheDefaults(t *testing.T) {
	p := DefaultPolicy()
	if problems := p.Check(Default()); len(problems) != 0 {
		t.Fatalf("the default config is refused: %v", problems)
	}
	for _, ref := range []string{"oci://ghcr.io/kube-vip/kube-vip", "oci://ghcr.io/kube-vip/charts/kube-vip-cloud-provider"} {
		if err := p.CheckKubevip(chartFrom(t, "", ref, "")); err != nil {
			t.Errorf("%s: %v", ref, err)
		}
	}
	if err := p.CheckKubevip(chartFrom(t, "https://kube-vip.github.io/helm-charts/", "", "")); err != nil {
		t.Errorf("upstream repository with a trailing slash: %v", err)
	}
}

// TestPolicyRefusesSourcesOutsideTheAllowList: whoever can edit kube-fip-config cannot point the
// operator at another repository or registry, also not by tricks on host, port or path.
func TestPolicyRefusesSourcesOutsideTheAllowList(t *testing.T) {
	p := DefaultPolicy()
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
		r := refusal(t, p.CheckKubevip(c))
		if r == nil {
			t.Errorf("%s%s: allowed", tt.repo, tt.ref)
			continue
		}
		wantKey := KeyKubevipChartRepoURL
		if tt.ref != "" {
			wantKey = KeyKubevipChartRef
		}
		if r.Reason != ProblemChartSourceNotAllowed || r.Key != wantKey || !strings.Contains(r.Error(), "allowed chart sources") {
			t.Errorf("%s%s: refusal %+v", tt.repo, tt.ref, r)
		}
		// The repository URL is shared: the cloud provider is refused as well.
		if tt.repo != "" && p.CheckKubevipCloudProvider(c) == nil {
			t.Errorf("%s: the cloud provider chart is allowed", tt.repo)
		}
		problems := p.Check(c)
		if len(problems) == 0 || !problems[0].Warning || problems[0].Reason != ProblemChartSourceNotAllowed ||
			!strings.Contains(problems[0].Error(), "nothing is installed") {
			t.Errorf("%s%s: Check = %v", tt.repo, tt.ref, problems)
		}
	}
}

// TestPolicyHTTPOnlyWithTheFlag: plain http repositories, and OCI registries on a loopback host
// (reached over plain http), are refused unless the deployment allows http.
func TestPolicyHTTPOnlyWithTheFlag(t *testing.T) {
	sources := []string{"http://charts.lab.example", "https://charts.lab.example", "oci://127.0.0.1:*"}
	if _, err := NewPolicy(sources, false, nil); err == nil {
		t.Error("an http allow-list entry without allow-http is accepted")
	}
	strict, err := NewPolicy([]string{"https://charts.lab.example", "https://kube-vip.io"}, false, DefaultImagePrefixes())
	if err != nil {
		t.Fatal(err)
	}
	loose, err := NewPolicy(sources, true, DefaultImagePrefixes())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{
		chartFrom(t, "http://charts.lab.example/kv", "", ""),
		chartFrom(t, "http://kube-vip.io/helm-charts", "", ""),
	} {
		r := refusal(t, strict.CheckKubevip(c))
		if r == nil || r.Reason != ProblemChartSourceNotAllowed || !strings.Contains(r.Message, "plain http") {
			t.Errorf("%s: want a plain-http refusal, got %v", c.Kubevip.RepoURL, r)
		}
	}
	if err := loose.CheckKubevip(chartFrom(t, "http://charts.lab.example/kv", "", "")); err != nil {
		t.Errorf("http with the flag and an http entry: %v", err)
	}
	if err := loose.CheckKubevip(chartFrom(t, "https://charts.lab.example/kv", "", "")); err != nil {
		t.Errorf("https entry: %v", err)
	}
	if err := loose.CheckKubevip(chartFrom(t, "", "oci://127.0.0.1:5000/charts/kube-vip", "")); err != nil {
		t.Errorf("loopback registry with any port: %v", err)
	}
	// An https entry does not allow the same host over http, even with the flag.
	if loose.CheckKubevip(chartFrom(t, "http://kube-vip.io/helm-charts", "", "")) == nil {
		t.Error("http source allowed by no http entry")
	}
	r := refusal(t, strict.CheckKubevip(chartFrom(t, "", "oci://127.0.0.1:5000/charts/kube-vip", "")))
	if r == nil || !strings.Contains(r.Message, "plain http") {
		t.Errorf("loopback OCI registry without allow-http: %v", r)
	}
}

// TestPolicyNeverEchoesCredentials: a Config built by hand with credentials in the URL is
// refused without repeating them.
func TestPolicyNeverEchoesCredentials(t *testing.T) {
	c := Default()
	c.Kubevip.RepoURL = "https://user:S3CRET@kube-vip.io/helm-charts"
	c.KubevipCloudProvider.Ref = "oci://robot:S3CRET@ghcr.io/kube-vip/x?token=S3CRET"
	for _, err := range []error{DefaultPolicy().CheckKubevip(c), DefaultPolicy().CheckKubevipCloudProvider(c)} {
		if err == nil || strings.Contains(err.Error(), "S3CRET") || !strings.Contains(err.Error(), "credentials") {
			t.Errorf("refusal %v", err)
		}
	}
}

// TestPolicyChartValues: images must be under an allowed prefix, and keys that add privileges
// are refused at any depth.
func TestPolicyChartValues(t *testing.T) {
	p := DefaultPolicy()
	allowed := []string{
		"image:\n  repository: ghcr.io/kube-vip/kube-vip\n  tag: v0.8.0\n  pullPolicy: Always\n",
		"image:\n  repository: plndr/kube-vip\n  tag: v0.6.4\n",
		"image:\n  repository: docker.io/plndr/kube-vip\n",
		"image:\n  tag: v0.8.0@sha256:" + strings.Repeat("a", 64) + "\n",
		"env:\n  vip_interface: eth0\nextraArgs:\n  prometheusHTTPServer: 0.0.0.0:2112\ntolerations: []\n",
		"sidecar:\n  image: ghcr.io/kube-vip/helper:v1\n",
	}
	for _, v := range allowed {
		if err := p.CheckKubevip(chartFrom(t, "", "", v)); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	refused := map[string]string{
		"image:\n  repository: docker.io/attacker/kube-vip\n":             "image.repository docker.io/attacker/kube-vip is not under",
		"image:\n  repository: attacker/kube-vip\n":                       "is not under",
		"image:\n  repository: ghcr.io/kube-vip-evil/kube-vip\n":          "is not under",
		"image:\n  repository: ghcr.io.attacker.example/kube-vip/kv\n":    "is not under",
		"image:\n  repository: ghcr.io/kube-vip/kube-vip:v1\n":            "image.repository is not an image repository",
		"image:\n  repository: ghcr.io/kube-vip/kube-vip\n  tag: a/b\n":   "image.tag is not an image tag",
		"image:\n  registry: docker.io\n":                                 "image.registry is not allowed",
		"image: docker.io/attacker/kube-vip:v1\n":                         "image docker.io/attacker/kube-vip is not under",
		"sidecar:\n  image:\n    repository: quay.io/attacker/x\n":        "sidecar.image.repository",
		"securityContext:\n  privileged: true\n":                          "securityContext adds privileges",
		"podSecurityContext:\n  runAsUser: 0\n":                           "podSecurityContext adds privileges",
		"volumes:\n- hostPath:\n    path: /\n  name: root\n":              "volumes adds privileges",
		"volumeMounts:\n- mountPath: /host\n  name: root\n":               "volumeMounts adds privileges",
		"hostAliases:\n- ip: 10.0.0.1\n  hostnames: [ghcr.io]\n":          "hostAliases adds privileges",
		"extra:\n  list:\n  - hostPID: true\n":                            "extra.list[0].hostPID adds privileges",
		"env:\n  vip_interface: eth0\nsecurityContext: {}\n":              "securityContext adds privileges",
		"image:\n  repository: docker.io/attacker/kv\n  tag: S3CRETTAG\n": "is not under",
		// Strings the upstream kube-vip chart 0.9.9 prints unquoted: a line break becomes YAML of
		// its own (a second container, hostPID, a hostPath volume).
		"image:\n  pullPolicy: \"IfNotPresent\\n        name: kv\\n      - image: docker.io/library/alpine:3.20\"\n": "image.pullPolicy holds a line break",
		"priorityClassName: \"system-node-critical\\n      hostPID: true\"\n":                                        "priorityClassName holds a line break",
		"env:\n  vip_interface: \"eth0\\r\"\n":                                                                       "env.vip_interface holds a line break",
		// extraArgs go through tpl: a template reads any object of the guest with lookup.
		"extraArgs:\n  leak: '{{ (lookup \"v1\" \"Secret\" \"kube-system\" \"x\").data }}'\n": "extraArgs.leak holds a line break or a template",
		"extraArgs:\n  list:\n  - '{{ .Release.Name }}'\n":                                    "extraArgs.list[0] holds",
		"image:\n  pullPolicy: Sometimes\n":                                                   "image.pullPolicy must be Always, IfNotPresent or Never",
	}
	for v, want := range refused {
		c := chartFrom(t, "", "", v)
		r := refusal(t, p.CheckKubevip(c))
		if r == nil {
			t.Errorf("%q: allowed", v)
			continue
		}
		if r.Reason != ProblemChartValuesNotAllowed || r.Key != KeyKubevipChartValues || !strings.Contains(r.Message, want) {
			t.Errorf("%q: refusal %+v, want it to say %q", v, r, want)
		}
		if strings.Contains(r.Error(), "S3CRETTAG") || strings.Contains(r.Error(), "10.0.0.1") {
			t.Errorf("%q: refusal repeats values: %v", v, r)
		}
	}
	// The cloud provider chart is checked with its own key.
	c, _ := Parse(map[string]string{KeyKubevipCloudProviderChartValues: "image:\n  repository: quay.io/x/y\n"}, Default())
	if r := refusal(t, p.CheckKubevipCloudProvider(c)); r == nil || r.Key != KeyKubevipCloudProviderChartValues {
		t.Errorf("cloud provider values: %v", r)
	}
	// A deployment that mirrors the images allows its mirror.
	mirror, err := NewPolicy(DefaultChartSources(), false, []string{"registry.corp.example:5000/mirror"})
	if err != nil {
		t.Fatal(err)
	}
	if err := mirror.CheckKubevip(chartFrom(t, "", "", "image:\n  repository: registry.corp.example:5000/mirror/kube-vip\n")); err != nil {
		t.Errorf("mirror: %v", err)
	}
	if mirror.Check(Default()) == nil {
		t.Error("the mirror-only policy allows the default Docker Hub images")
	}
}

func TestNewPolicyRejectsBadEntries(t *testing.T) {
	for _, bad := range []string{
		"ftp://x", "kube-vip.io/helm-charts", "https://user:S3CRET@kube-vip.io", "https://kube-vip.io/x?token=S3CRET",
		"https://:443/x", "https://kube-vip.io:port/x", "https://*.example.com",
	} {
		_, err := NewPolicy([]string{bad}, true, nil)
		if err == nil {
			t.Errorf("%q: accepted", bad)
		} else if strings.Contains(err.Error(), "S3CRET") {
			t.Errorf("%q: error repeats credentials: %v", bad, err)
		}
	}
	if _, err := NewPolicy(nil, false, []string{"Not An Image"}); err == nil {
		t.Error("a bad image prefix is accepted")
	}
	p, err := NewPolicy([]string{" ", ""}, false, []string{""})
	if err != nil {
		t.Fatal(err)
	}
	if p.CheckKubevip(Default()) == nil {
		t.Error("an empty allow-list allows the default source")
	}
}

// TestInstallModeTypoAtStartUp: at start-up the previous configuration is the default
// (clusterlabel); a typo used to fall back to it, installing into every labelled cluster. The
// narrowest mode applies instead, and the problem says so.
func TestInstallModeTypoAtStartUp(t *testing.T) {
	for _, typo := range []string{"disable", "Disabeld", "none", "off"} { //nolint:misspell // the misspelt mode is the input under test
		got, problems := Parse(map[string]string{KeyKubevipGuestInstall: typo}, Default())
		if got.KubevipGuestInstall != InstallDisabled {
			t.Errorf("%q at start-up gives %s", typo, got.KubevipGuestInstall)
		}
		if len(problems) != 1 || problems[0].Key != KeyKubevipGuestInstall || problems[0].Reason != ProblemInvalidValue ||
			!strings.Contains(problems[0].Fallback, "disabled until it is fixed") {
			t.Errorf("%q: problems %+v", typo, problems)
		}
	}
}
