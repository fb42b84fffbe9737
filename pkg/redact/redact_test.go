package redact

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

const secret = "S3CRET"

// TestTextRemovesCredentialsFromRealisticErrors feeds Text the error texts Helm, Go's HTTP client,
// the OCI registry client and YAML parsers produce when a repository URL, a header or the chart
// values carry a credential.
func TestTextRemovesCredentialsFromRealisticErrors(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"helm repo index, URL quoted raw": `looks like "https://user:S3CRET@charts.example.com/kube-vip" is not a valid chart repository or cannot be reached: ` +
			`Get "https://user:***@charts.example.com/kube-vip/index.yaml": dial tcp: lookup charts.example.com: no such host`,
		"helm chart download":           `failed to fetch https://user:S3CRET@charts.example.com/kube-vip/kube-vip-0.6.4.tgz : 401 Unauthorized`,
		"operator wrapping":             `fetching chart https://admin:S3CRET@127.0.0.1:8443/charts kube-vip 0.6.4: connection refused`,
		"password holding an at sign":   `fetching chart https://user:p@S3CRET@charts.example.com/index.yaml: 404`,
		"oci reference":                 `pulling oci://robot$kube:S3CRET@registry.example.com/charts/kube-vip:0.6.4: not found`,
		"query token":                   `Get "https://registry.example.com/v2/token?scope=pull&access_token=S3CRET&x=1": 401 Unauthorized`,
		"authorization header":          `request failed: Authorization: Bearer S3CRET rejected`,
		"basic authorization header":    `header "Authorization": "Basic dXNlcjpTM0NSRVQ=" rejected`,
		"bearer token in text":          `the server rejected bearer S3CRETxxxxxxxxxxxx`,
		"values echoed as YAML":         "values don't meet the specifications of the schema(s): image:\n  registryPassword: S3CRET\n",
		"values echoed as JSON":         `error converting YAML to JSON: {"env":{"vip_interface":"eth0"},"clientSecret":"S3CRET"}`,
		"quoted value with a space":     `password: "my S3CRET"`,
		"kubeconfig echoed":             "users:\n- name: user\n  user:\n    token: kubeconfig-u-abc:S3CRET\n",
		"key data":                      "client-key-data: LS0tS3CRET",
		"pem private key":               "-----BEGIN RSA PRIVATE KEY-----\nMIIS3CRET\n-----END RSA PRIVATE KEY-----",
		"pem cut before its end":        "loading -----BEGIN EC PRIVATE KEY-----\nMIIS3CRET",
		"flag form":                     "--password=S3CRET --username=admin",
		"url credentials in a sentence": `the repository https://user:S3CRET@h/x answered 500 and https://h2/y answered 200`,
	} {
		t.Run(name, func(t *testing.T) {
			out := Text(in)
			if strings.Contains(out, secret) {
				t.Errorf("Text(%q) = %q: the credential is still there", in, out)
			}
			if !strings.Contains(out, Mask) {
				t.Errorf("Text(%q) = %q: nothing was masked", in, out)
			}
		})
	}
}

// TestTextKeepsOrdinaryMessages: what the operator says about clusters, releases and addresses
// must stay readable.
func TestTextKeepsOrdinaryMessages(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"Rancher refused the token of the kubeconfig Secret fleet-default/guest-kubeconfig (401); retried with the Secret as Rancher rewrites it",
		"kube-system/kubevip has cidr-global 10.0.0.1/32",
		"fetching chart oci://ghcr.io/kube-vip/charts/kube-vip@sha256:0123456789abcdef 0.6.4: not found",
		`looks like "https://kube-vip.github.io/helm-charts" is not a valid chart repository`,
		"kube-vip: installing kube-vip from https://kube-vip.github.io/helm-charts?ref=main: timed out",
		"the guest refused the Rancher user (403 listing ConfigMaps in kube-system): it needs the cluster-owner role",
		"a bearer token is sent only over TLS",
		"",
	} {
		if out := Text(in); out != in {
			t.Errorf("Text(%q) = %q; want it unchanged", in, out)
		}
	}
}

func TestTextMasksKnownSecretsAnywhere(t *testing.T) {
	t.Parallel()
	token := "kubeconfig-u-abc12:tokenvalue1234"
	in := fmt.Sprintf("guest said: the token %s is invalid (key %s)", token, "tokenvalue1234")
	out := Text(in, token, "tokenvalue1234", "", "ab")
	if strings.Contains(out, "tokenvalue1234") || strings.Contains(out, "kubeconfig-u-abc12") {
		t.Errorf("Text = %q: a known secret is still there", out)
	}
	if want := "guest said: the token REDACTED is invalid (key REDACTED)"; out != want {
		t.Errorf("Text = %q, want %q", out, want)
	}
	// Short strings are no secrets to hunt for: "ab" must not mask every "ab".
	if out := Secrets("about a cab", "ab"); out != "about a cab" {
		t.Errorf("Secrets with a 2-character secret = %q; want the text unchanged", out)
	}
}

func TestTextCapsLength(t *testing.T) {
	t.Parallel()
	huge := "invalid CIDR " + strings.Repeat("1", 10<<20) + " password: " + secret
	out := Text(huge)
	if len(out) > MaxMessage {
		t.Errorf("len(Text(10 MB)) = %d, want at most %d", len(out), MaxMessage)
	}
	if !strings.HasSuffix(out, truncated) {
		t.Errorf("a cut text does not say it was cut: ...%q", out[len(out)-20:])
	}
	// A cut never splits a character.
	multi := strings.Repeat("é", MaxMessage)
	if out := Text(multi); !utf8.ValidString(out) || len(out) > MaxMessage {
		t.Errorf("Text of multi-byte text: valid UTF-8 %v, %d bytes", utf8.ValidString(out), len(out))
	}
	// A credential straddling the first, generous cut is still gone from the result.
	straddle := strings.Repeat("x", 16*MaxMessage-10) + " https://u:" + secret + "@h/"
	if out := Text(straddle); strings.Contains(out, secret) {
		t.Error("a credential at the first cut survived")
	}
}

func TestError(t *testing.T) {
	t.Parallel()
	if Error(nil) != "" {
		t.Error("Error(nil) is not empty")
	}
	err := fmt.Errorf("installing kube-vip: %w", errors.New(`Get "https://u:`+secret+`@h/index.yaml": EOF`))
	if out := Error(err); strings.Contains(out, secret) || !strings.HasPrefix(out, "installing kube-vip: ") {
		t.Errorf("Error = %q", out)
	}
}

func TestURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://user:S3CRET@charts.example.com/kube-vip?token=S3CRET#x": "https://REDACTED@charts.example.com/kube-vip",
		"https://rancher.example.com/k8s/clusters/c-m-abc":               "https://rancher.example.com/k8s/clusters/c-m-abc",
		"oci://u:S3CRET@registry.example.com/charts":                     "oci://REDACTED@registry.example.com/charts",
		"not a url password=S3CRET":                                      "not a url password=REDACTED",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
	if got := URL("https://h/" + strings.Repeat("a", 1000)); len(got) > 256 {
		t.Errorf("URL of a long URL is %d bytes, want at most 256", len(got))
	}
}

func FuzzTextNeverShowsURLPasswords(f *testing.F) {
	f.Add("https://", "user", "pa55word", "@host/x")
	f.Add(`"oci://`, "u", "p@ss:word", `@registry/charts"`)
	f.Fuzz(func(t *testing.T, scheme, user, password, rest string) {
		if len(password) < MinSecret || strings.ContainsAny(password, "/?#\"'<> \t\r\n\f\v") ||
			strings.ContainsAny(user, "/?#\"'<> \t\r\n\f\v") || !strings.HasPrefix(rest, "@") ||
			!strings.HasSuffix(strings.TrimLeft(scheme, `"`), "://") || len(scheme) < 4 ||
			!isScheme(strings.TrimSuffix(strings.TrimLeft(scheme, `"`), "://")) {
			t.Skip()
		}
		in := scheme + user + ":" + password + rest
		if out := Text(in); strings.Contains(out, user+":"+password+"@") {
			t.Errorf("Text(%q) = %q", in, out)
		}
	})
}

func isScheme(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}
