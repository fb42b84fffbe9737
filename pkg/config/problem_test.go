package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

func TestProblemError(t *testing.T) {
	t.Parallel()
	_, problems := Parse(map[string]string{KeyMetricsPort: "abc"}, Default())
	want := `kube-fip-config key "metricsPort": invalid value "abc": must be an integer between 1 and 65535`
	if len(problems) != 1 || problems[0].Error() != want {
		t.Fatalf("got %v, want %q", problems, want)
	}
}

func TestProblemValueTruncated(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 300) // multi-byte, so the cut must respect rune boundaries
	_, problems := Parse(map[string]string{KeyKubevipNamespace: long}, Default())
	if len(problems) != 1 {
		t.Fatalf("got %v", problems)
	}
	v := problems[0].Value
	if len(v) > maxEcho+3 || !strings.HasSuffix(v, redact.Ellipsis) || !strings.HasPrefix(v, "éé") {
		t.Errorf("value not truncated sensibly: %q (%d bytes)", v, len(v))
	}
	if strings.ContainsRune(strings.TrimSuffix(v, redact.Ellipsis), '\uFFFD') {
		t.Errorf("truncation split a rune: %q", v)
	}
}

func TestChartRefVersionPair(t *testing.T) {
	t.Parallel()
	const ref, version = "oci://ghcr.io/kube-vip/charts/kube-vip", "0.8.0"
	tests := []struct {
		name     string
		data     map[string]string
		prev     Config
		wantKeys []string
		wantMsg  string
	}{
		{"both", map[string]string{KeyKubevipChartRef: ref, KeyKubevipChartVersion: version}, Default(), []string{}, ""},
		{"neither", map[string]string{}, Default(), []string{}, ""},
		{"ref only", map[string]string{KeyKubevipChartRef: ref}, Default(),
			[]string{KeyKubevipChartRef}, "kubevipChartRef is set but kubevipChartVersion is empty"},
		// A version alone pins the repository's chart.
		{"version only", map[string]string{KeyKubevipChartVersion: version}, Default(), []string{}, ""},
		{"cloud provider ref only", map[string]string{KeyKubevipCloudProviderChartRef: ref}, Default(),
			[]string{KeyKubevipCloudProviderChartRef}, "kubevipCloudProviderChartVersion is empty"},
		// An invalid version keeps the previous one, which completes the pair.
		{"invalid version, previous completes", map[string]string{KeyKubevipChartRef: ref, KeyKubevipChartVersion: "latest"},
			previousConfig(t), []string{KeyKubevipChartVersion}, "invalid value"},
		// With no previous version the default one stays in force, and the version was given:
		// one problem.
		{"invalid version, no previous", map[string]string{KeyKubevipChartRef: ref, KeyKubevipChartVersion: "latest"},
			Default(), []string{KeyKubevipChartVersion}, "invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problems := Parse(tt.data, tt.prev)
			if keys := problemKeys(problems); !reflect.DeepEqual(keys, tt.wantKeys) {
				t.Fatalf("problem keys %v, want %v (%v)", keys, tt.wantKeys, problems)
			}
			if tt.wantMsg != "" && !strings.Contains(problems[len(problems)-1].Error(), tt.wantMsg) {
				t.Errorf("last problem %q does not mention %q", problems[len(problems)-1].Error(), tt.wantMsg)
			}
			// The pair rule reports but never discards a valid half.
			if r, ok := tt.data[KeyKubevipChartRef]; ok && got.Kubevip.Ref != r {
				t.Errorf("Ref %q, want %q kept as given", got.Kubevip.Ref, r)
			}
			if v, ok := tt.data[KeyKubevipChartVersion]; ok && v != "latest" && got.Kubevip.Version != v {
				t.Errorf("Version %q, want %q", got.Kubevip.Version, v)
			}
			for _, p := range problems {
				pair := p.Reason == ProblemIncompleteChart
				if pair != strings.Contains(p.Message, "incomplete chart selection") || p.Warning != pair {
					t.Errorf("pair problem has wrong kind or warning flag: %+v", p)
				}
			}
		})
	}
}

func TestUnknownKeys(t *testing.T) {
	t.Parallel()
	tests := []struct{ key, suggestion string }{
		{"loglevel", KeyLogLevel},
		{"LOGLEVEL", KeyLogLevel},
		{"metricPort", KeyMetricsPort},
		{"metricsport", KeyMetricsPort},
		{"kubevipChartValue", KeyKubevipChartValues},
		{"kubevipChartRepoURL", KeyKubevipChartRepoURL},
		{"kubeVipNameSpace", KeyKubevipNamespace},
		{"operateGuestClusterIntervall", KeyOperateGuestClusterInterval},
		{"adressRetention", KeyAddressRetention},
		{"addressRetension", KeyAddressRetention},
		{"AddressRetention", KeyAddressRetention},
		{"foo", ""},
		{"ab", ""},
		{"", ""},
		{strings.Repeat("x", 500), ""},
	}
	for _, tt := range tests {
		got, problems := Parse(map[string]string{tt.key: "password: hunter2"}, Default())
		if !got.Equal(Default()) {
			t.Errorf("%q: unknown key changed the config", tt.key)
		}
		if len(problems) != 1 || !problems[0].Warning || problems[0].Reason != ProblemUnknownKey {
			t.Errorf("%q: want one warning, got %v", tt.key, problems)
			continue
		}
		msg := problems[0].Error()
		if strings.Contains(msg, "hunter2") || problems[0].Value != "" {
			t.Errorf("%q: unknown key's value echoed: %q", tt.key, msg)
		}
		if !strings.Contains(msg, "unknown key") {
			t.Errorf("%q: %q does not say unknown key", tt.key, msg)
		}
		hint := `did you mean "` + tt.suggestion + `"?`
		if tt.suggestion != "" && !strings.Contains(msg, hint) {
			t.Errorf("%q: %q lacks %s", tt.key, msg, hint)
		}
		if tt.suggestion == "" && strings.Contains(msg, "did you mean") {
			t.Errorf("%q: unexpected suggestion in %q", tt.key, msg)
		}
		if len(problems[0].Key) > maxEcho+3 {
			t.Errorf("unknown key not truncated: %d bytes", len(problems[0].Key))
		}
	}
	// Several unknown keys come out in a stable order after the known-key problems.
	_, problems := Parse(map[string]string{"zz": "1", "aa": "1", KeyMetricsPort: "x"}, Default())
	if keys := problemKeys(problems); !reflect.DeepEqual(keys, []string{KeyMetricsPort, "aa", "zz"}) {
		t.Errorf("problem order %v", keys)
	}
}

func TestChartValuesNeverEchoed(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-PASSWORD"
	docs := []string{
		"auth:\n  password: " + secret + "\n bad: indent",
		"auth: {password: " + secret,
		"x: *" + secret,
		"{" + secret + ": 1}: b",
		"? [" + secret + "]\n: v",
		"a: !!binary " + secret,
		"a: !!int " + secret,
		"- " + secret,
		secret,
		"password: \"" + secret + "\\q\"",
		"password: " + secret + "\n\tother: 1",
		"a: &" + secret + " [*" + secret + "]\nb: *" + secret,
	}
	for _, key := range []string{KeyKubevipChartValues, KeyKubevipCloudProviderChartValues} {
		for _, doc := range docs {
			got, problems := Parse(map[string]string{key: doc}, Default())
			if len(problems) == 0 {
				// Some of these are valid YAML; then only String matters.
				if s := got.String(); strings.Contains(s, secret) {
					t.Errorf("String leaks values: %s", s)
				}
				continue
			}
			for _, p := range problems {
				if strings.Contains(p.Error(), secret) || strings.Contains(p.Value, secret) {
					t.Errorf("%s %q: problem leaks the values: %q", key, doc, p.Error())
				}
			}
		}
	}
	_, problems := Parse(map[string]string{KeyKubevipChartValues: "x: *" + secret}, Default())
	if len(problems) != 1 || !strings.HasSuffix(problems[0].Error(), "invalid YAML: alias refers to an unknown anchor") {
		t.Errorf("unknown anchor: got %v", problems)
	}
	// A syntax error still says where it is.
	_, problems = Parse(map[string]string{KeyKubevipChartValues: "a: b\n c: " + secret}, Default())
	want := "invalid YAML at line 2: mapping values are not allowed in this context"
	if len(problems) != 1 || !strings.HasSuffix(problems[0].Error(), want) {
		t.Errorf("got %v, want suffix %q", problems, want)
	}
}

func TestURLCredentialsMasked(t *testing.T) {
	t.Parallel()
	// Rejected values are echoed with the credentials masked ...
	for key, v := range map[string]string{
		KeyKubevipChartRepoURL: "ftp://user:t0ken@example.com/charts",
		KeyKubevipChartRef:     "oci://robot:t0ken@ghcr.io/charts/kv",
		KeyKubevipNamespace:    "https://t0ken@example.com",
		KeyMetricsPort:         "https://us/er:t0ken@example.com", // does not parse as a URL
	} {
		_, problems := Parse(map[string]string{key: v}, Default())
		if len(problems) == 0 || strings.Contains(problems[0].Error(), "t0ken") || !strings.Contains(problems[0].Value, "xxxxx@") {
			t.Errorf("%s: credentials not masked: %v", key, problems)
		}
	}
	// ... a token in a fragment as well ...
	for _, v := range []string{"https://example.com/charts#t0ken", "https://example.com/charts?x=1#t0ken"} {
		_, problems := Parse(map[string]string{KeyKubevipChartRepoURL: v}, Default())
		if len(problems) == 0 || strings.Contains(problems[0].Error(), "t0ken") {
			t.Errorf("%s: fragment not masked: %v", v, problems)
		}
	}
	// ... and String masks them in a hand-built Config.
	c := Default()
	c.Kubevip.RepoURL = "https://user:t0ken@charts.example.com/kv?access_token=t0ken"
	if s := c.String(); strings.Contains(s, "t0ken") || !strings.Contains(s, "charts.example.com") {
		t.Errorf("String = %s", s)
	}
}

// TestRepoURLWithCredentialsRefused: a repository URL carrying credentials is
// refused (it used to be accepted, and the raw URL reached errors, Events and
// logs), the previous URL stays in force, and the problem does not repeat the
// credentials.
func TestRepoURLWithCredentialsRefused(t *testing.T) {
	t.Parallel()
	prev := previousConfig(t)
	for _, repo := range []string{
		"https://user:S3CRET@charts.example.com/kv",
		"https://S3CRET@charts.example.com/kv",
		"https://charts.example.com/kv?token=S3CRET",
		"http://us/er:S3CRET@charts.example.com/kv",
	} {
		got, problems := Parse(map[string]string{KeyKubevipChartRepoURL: repo}, prev)
		if got.Kubevip.RepoURL != prev.Kubevip.RepoURL || got.KubevipCloudProvider.RepoURL != prev.KubevipCloudProvider.RepoURL {
			t.Errorf("%s: accepted (%q)", repo, got.Kubevip.RepoURL)
		}
		if len(problems) != 1 || problems[0].Reason != ProblemInvalidValue || problems[0].Key != KeyKubevipChartRepoURL {
			t.Fatalf("%s: problems %v", repo, problems)
		}
		if msg := problems[0].Error() + problems[0].Fallback; strings.Contains(msg, "S3CRET") || !strings.Contains(msg, "credentials") {
			t.Errorf("%s: problem %q", repo, msg)
		}
	}
}
