package guestcluster

import (
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/helminstall"
)

const chartPassword = "ch4rt-pa55w0rd"

// withChartSecret installs both charts and names a chart credentials Secret holding data (and the
// username and password); it returns what each EnsureRelease was given, by chart.
func withChartSecret(w *world, data map[string]string) map[string]helminstall.Release {
	w.cfg.KubevipGuestInstall = config.InstallEnabled
	w.opts.ChartCredentialsSecret = "chart-creds"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "chart-creds", Namespace: w.opts.Namespace},
		Data: map[string][]byte{CredentialsUsernameKey: []byte("robot"), CredentialsPasswordKey: []byte(chartPassword)}}
	for k, v := range data {
		secret.Data[k] = []byte(v)
	}
	w.secrets = append(w.secrets, secret)
	var mu sync.Mutex
	given := map[string]helminstall.Release{}
	w.guest.release = func(rel helminstall.Release) (helminstall.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		given[rel.Chart] = rel
		return helminstall.Result{Outcome: helminstall.Installed}, nil
	}
	return given
}

// TestChartCredentialsSecretNamesItsSource: a Secret without the source key, or with more than a
// scheme, host and port in it, is refused before anything is fetched, saying which key to add.
func TestChartCredentialsSecretNamesItsSource(t *testing.T) {
	for _, tc := range []struct {
		name, source, says string
	}{
		{"no source", "", "chart-creds needs the key source"},
		{"a path", "https://kube-vip.io/helm-charts", "key source with more than scheme://host[:port]"},
		{"no scheme", "kube-vip.io", "key source that is not scheme://host[:port]"},
		{"another scheme", "ftp://kube-vip.io", "key source that does not start with"},
		{"credentials in it", "https://robot:" + chartPassword + "@kube-vip.io", "key source with more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			data := map[string]string{}
			if tc.source != "" {
				data[CredentialsSourceKey] = tc.source
			}
			given := withChartSecret(w, data)
			f, events := w.pass(t, testCluster+"-kubevip")
			reason, status, message := reasonOf(f, v1.KubevipInstalled)
			if reason != v1.ReasonChartCredentials || status != corev1.ConditionFalse || !strings.Contains(message, tc.says) ||
				!strings.Contains(message, "kube-fip/chart-creds") {
				t.Errorf("KubevipInstalled = %s/%s %q; want %s naming the Secret and saying %q", status, reason, message, v1.ReasonChartCredentials, tc.says)
			}
			if len(given) != 0 {
				t.Errorf("charts were fetched with a Secret that names no valid source: %v", len(given))
			}
			noPassword(t, message, events)
		})
	}
}

// TestChartCredentialsGoOnlyToTheirSource: the credentials go to a chart whose source has the
// Secret's scheme, host and port (default ports alike), and to no other allowed source; the
// condition says which chart went without them and why.
func TestChartCredentialsGoOnlyToTheirSource(t *testing.T) {
	const providerRef = "oci://ghcr.io/kube-vip/kube-vip-cloud-provider"
	for _, tc := range []struct {
		name, source   string
		kubevip, cloud bool // whether kube-vip (repository kube-vip.io) and the provider (ghcr.io) get them
		says           string
	}{
		{"the repository", "https://kube-vip.io", true, false,
			"not used for kube-vip-cloud-provider: they belong to https://kube-vip.io, not to its chart source " + providerRef},
		{"the repository, default port written", "https://kube-vip.io:443/", true, false, "not used for kube-vip-cloud-provider"},
		{"the registry", "oci://ghcr.io", false, true,
			"not used for kube-vip: they belong to oci://ghcr.io, not to its chart source https://kube-vip.io/helm-charts"},
		{"another port of the repository's host", "https://kube-vip.io:8443", false, false, "they belong to https://kube-vip.io:8443"},
		{"another scheme of the registry's host", "https://ghcr.io", false, false, "they belong to https://ghcr.io"},
		{"another allowed source", "https://kube-vip.github.io", false, false, "not used for kube-vip:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			given := withChartSecret(w, map[string]string{CredentialsSourceKey: tc.source})
			w.cfg.KubevipCloudProvider.Ref, w.cfg.KubevipCloudProvider.Version = providerRef, "0.2.10"
			f, events := w.pass(t, testCluster+"-kubevip")
			reason, status, message := reasonOf(f, v1.KubevipInstalled)
			if reason != v1.ReasonInstalled || status != corev1.ConditionTrue || !strings.Contains(message, tc.says) {
				t.Errorf("KubevipInstalled = %s/%s %q; want %s saying %q", status, reason, message, v1.ReasonInstalled, tc.says)
			}
			for chart, want := range map[string]bool{"kube-vip": tc.kubevip, "kube-vip-cloud-provider": tc.cloud} {
				rel, ok := given[chart]
				if !ok {
					t.Fatalf("%s was not installed", chart)
				}
				if got := rel.Credentials != nil; got != want {
					t.Errorf("%s from %s%s got credentials %v; want %v", chart, rel.RepoURL, rel.Ref, got, want)
				}
				if rel.Credentials != nil && rel.Credentials.Password != chartPassword {
					t.Errorf("%s got other credentials", chart)
				}
				if rel.Sources == nil {
					t.Errorf("%s was fetched without the deployment's chart sources", chart)
				}
			}
			noPassword(t, message, events)
		})
	}
}

func noPassword(t *testing.T, message string, events []string) {
	t.Helper()
	for _, text := range append([]string{message}, events...) {
		if strings.Contains(text, chartPassword) {
			t.Errorf("the chart password reached a condition or an Event: %q", text)
		}
	}
}
