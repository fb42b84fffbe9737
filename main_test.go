package main

import (
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kubefip/kube-fip-operator/pkg/operator"
)

// parse runs the operator's command line up to the point where it would start, and returns the
// options it would start with.
func parse(t *testing.T, env map[string]string, args ...string) (operator.Options, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	s := settings{opts: operator.DefaultOptions()}
	var opts operator.Options
	app := &cli.App{Name: "kube-fip-operator", Flags: s.flags(), Action: func(c *cli.Context) error {
		var err error
		opts, err = s.options(c)
		return err
	}}
	err := app.Run(append([]string{"kube-fip-operator"}, args...))
	return opts, err
}

func TestFlagDefaults(t *testing.T) {
	opts, err := parse(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := operator.DefaultOptions()
	if opts.Namespace != want.Namespace || opts.Threads != want.Threads || opts.GuestTimeout != want.GuestTimeout ||
		opts.LeaderElection != want.LeaderElection || opts.OrphanGracePeriod != want.OrphanGracePeriod {
		t.Errorf("defaults %+v; want those of operator.DefaultOptions %+v", opts, want)
	}
	if p := opts.ChartPolicy.String(); p != want.ChartPolicy.String() {
		t.Errorf("default chart policy %s; want %s", p, want.ChartPolicy)
	}
}

func TestFlagsAndEnvironment(t *testing.T) {
	opts, err := parse(t, map[string]string{
		"THREADS": "7", "GUEST_TIMEOUT": "3s", "ALLOWED_CHART_SOURCES": "https://charts.example.com,oci://registry.example.com/kv",
		"KUBE_API_QPS": "25", "ALLOWED_CHART_DIGESTS": "kube-vip@sha256:" + strings.Repeat("ab", 32), "GUEST_CHARTS_DIR": "/charts",
		"RENDER_TIME": "45s",
	}, "--namespace=ops", "--leader-election=false", "--allowed-kubevip-images=registry.example.com/kv", "--allowed-cloud-provider-images=")
	if err != nil {
		t.Fatal(err)
	}
	if opts.Namespace != "ops" || opts.Threads != 7 || opts.GuestTimeout != 3*time.Second || opts.LeaderElection || opts.KubeAPIQPS != 25 {
		t.Errorf("options %+v do not carry the flags and environment", opts)
	}
	p := opts.ChartPolicy.String()
	digest := "kube-vip@sha256:" + strings.Repeat("ab", 32)
	if !strings.Contains(p, digest) {
		t.Errorf("policy %s lacks the chart digest ALLOWED_CHART_DIGESTS allows", p)
	}
	if r := opts.ChartPolicy.Renders(); !strings.Contains(r, "process of its own: 45s,") {
		t.Errorf("renders %s, not within the time RENDER_TIME sets", r)
	}
	if opts.GuestChartsDir != "/charts" {
		t.Errorf("guest charts directory %q; want GUEST_CHARTS_DIR's", opts.GuestChartsDir)
	}
	for _, want := range []string{"https://charts.example.com", "oci://registry.example.com/kv", "registry.example.com/kv"} {
		if !strings.Contains(p, want) {
			t.Errorf("policy %s lacks %s", p, want)
		}
	}
	if strings.Contains(p, "ghcr.io") {
		t.Errorf("policy %s kept a default that the flags replaced", p)
	}
}

// The last of a repeated flag wins, as a test or a person adding one to the chart's arguments
// expects.
func TestRepeatedListFlagReplaces(t *testing.T) {
	opts, err := parse(t, nil, "--allowed-chart-sources=https://a.example.com", "--allowed-chart-sources=https://b.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if p := opts.ChartPolicy.String(); strings.Contains(p, "a.example.com") || !strings.Contains(p, "b.example.com") || strings.Contains(p, "kube-vip.io") {
		t.Errorf("policy %s; want only https://b.example.com", p)
	}
}

// An empty list, as the chart renders for security.allowedChartSources: [], allows nothing.
func TestEmptyAllowListAllowsNothing(t *testing.T) {
	opts, err := parse(t, nil, "--allowed-chart-sources=", "--allowed-kubevip-images=", "--allowed-cloud-provider-images=")
	if err != nil {
		t.Fatal(err)
	}
	if p := opts.ChartPolicy.String(); strings.Contains(p, "://") || strings.Contains(p, "ghcr.io") {
		t.Errorf("policy %s; want no source and no image", p)
	}
}

// TestReplacedImagePrefixesFlag: the flag of earlier versions stops the operator with a message
// naming its replacements, rather than being ignored while the deployment thinks it applies.
func TestReplacedImagePrefixesFlag(t *testing.T) {
	_, err := parse(t, nil, "--allowed-image-prefixes=ghcr.io/kube-vip")
	if err == nil || !strings.Contains(err.Error(), "--allowed-kubevip-images") || !strings.Contains(err.Error(), "--allowed-cloud-provider-images") {
		t.Errorf("--allowed-image-prefixes: %v; want a refusal naming the flags that replace it", err)
	}
}

func TestBadFlagValues(t *testing.T) {
	for name, tc := range map[string]struct {
		env  map[string]string
		args []string
		says string
	}{
		"env not a number":     {env: map[string]string{"THREADS": "many"}, says: "THREADS"},
		"env not a duration":   {env: map[string]string{"GUEST_TIMEOUT": "15"}, says: "GUEST_TIMEOUT"},
		"negative qps":         {args: []string{"--kube-api-qps=-1"}, says: "--kube-api-qps"},
		"http source":          {args: []string{"--allowed-chart-sources=http://charts.example.com"}, says: "allow-http-chart-sources"},
		"secret name":          {args: []string{"--chart-credentials-secret=Not_A_Name"}, says: "--chart-credentials-secret"},
		"chart digest":         {args: []string{"--allowed-chart-digests=kube-vip@sha256:abc"}, says: "--allowed-chart-digests"},
		"security secret name": {args: []string{"--security-secret=Not_A_Name"}, says: "--security-secret"},
		"security secret and a flag": {args: []string{"--security-secret=kube-fip-operator-security", "--allowed-chart-sources=https://a.example.com"},
			says: "--allowed-chart-sources: the security settings come from --security-secret alone"},
		"security secret and an env": {env: map[string]string{"ALLOW_HTTP_CHART_SOURCES": "true"}, args: []string{"--security-secret=kube-fip-operator-security"},
			says: "--allow-http-chart-sources: the security settings come from --security-secret alone"},
		"chart digest env": {env: map[string]string{"ALLOWED_CHART_DIGESTS": "nginx@sha256:" + strings.Repeat("0", 64)}, says: `names chart "nginx"`},
		"missing CA bundle": {args: []string{"--additional-trusted-cas=/nonexistent/ca-additional.pem"},
			says: "--additional-trusted-cas, HTTP_PROXY, HTTPS_PROXY: the additional trusted CA bundle /nonexistent/ca-additional.pem cannot be read: no such file or directory"},
		"CA bundle env not PEM": {env: map[string]string{"ADDITIONAL_TRUSTED_CAS": "main.go"}, says: "the additional trusted CA bundle main.go holds no PEM certificate"},
		"proxy not a URL":       {env: map[string]string{"HTTPS_PROXY": "ftp://proxy.example"}, says: `the proxy HTTPS_PROXY=ftp://proxy.example has scheme "ftp"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parse(t, tc.env, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %v; want one that names %s", err, tc.says)
			}
		})
	}
}

// TestGuestImageFlags: the registry, the digest switch and the pull Secret, by flag or
// environment, reach the policy and the guest options; a registry given with a scheme, or a pull
// Secret that is no Secret name, stops the operator.
func TestGuestImageFlags(t *testing.T) {
	opts, err := parse(t, map[string]string{"GUEST_IMAGE_REGISTRY": "registry.corp.example:5000", "REQUIRE_IMAGE_DIGESTS": "true"},
		"--guest-image-pull-secret=registry-pull", "--guest-image-registry-plain-http")
	if err != nil {
		t.Fatal(err)
	}
	p := opts.ChartPolicy
	if p.Images().Registry() != "registry.corp.example:5000" || !p.Images().RequireDigest() || !p.Images().PullSecret() || opts.ImagePullSecret != "registry-pull" || !opts.ImageRegistryPlainHTTP {
		t.Errorf("options %+v, policy %s: want the registry, digests required and the pull Secret", opts, p)
	}
	if s := p.String(); !strings.Contains(s, "kube-vip images [registry.corp.example:5000/kube-vip/kube-vip]") {
		t.Errorf("policy %s: want the pinned kube-vip image under the registry as the only one allowed", s)
	}
	for _, args := range [][]string{{"--guest-image-registry=https://registry.corp.example"}, {"--guest-image-pull-secret=Not A Name"}} {
		if _, err := parse(t, nil, args...); err == nil {
			t.Errorf("%v: the operator starts", args)
		}
	}
}

func TestGuestImageDefaults(t *testing.T) {
	opts, err := parse(t, nil)
	if err != nil || opts.ChartPolicy.Images().Registry() != "" || opts.ChartPolicy.Images().RequireDigest() || opts.ChartPolicy.Images().PullSecret() {
		t.Errorf("defaults: %v, %s; want the upstream registries, no digests required, no pull Secret", err, opts.ChartPolicy)
	}
}
