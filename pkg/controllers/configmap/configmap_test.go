package configmap

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// TestEveryReason: each Event reason of the ConfigMap handler, from the ConfigMap that leads to
// it; the bad value is not taken and the good ones are; a resync of the same ConfigMap repeats
// nothing.
func TestEveryReason(t *testing.T) {
	policy := installpolicy.Default()
	for _, tc := range []struct {
		name   string
		data   map[string]string
		reason string
		check  func(config.Config) bool
	}{
		{"a good change", map[string]string{config.KeyOperateGuestClusterInterval: "30"}, v1.ReasonReloaded,
			func(c config.Config) bool { return c.OperateGuestClusterInterval.Seconds() == 30 }},
		{"a bad value", map[string]string{config.KeyOperateGuestClusterInterval: "soon", config.KeyLogLevel: "debug"}, string(config.ProblemInvalidValue),
			func(c config.Config) bool {
				return c.OperateGuestClusterInterval == config.Default().OperateGuestClusterInterval && c.LogLevel.String() == "debug"
			}},
		{"an unknown key", map[string]string{"operateGuestClusterIntervall": "30"}, string(config.ProblemUnknownKey), nil},
		{"half a chart selection", map[string]string{config.KeyKubevipChartRef: "oci://ghcr.io/kube-vip/kube-vip"}, string(config.ProblemIncompleteChart), nil},
		{"a chart source outside the policy", map[string]string{config.KeyKubevipChartRepoURL: "https://charts.example.com"}, v1.ReasonChartSourceNotAllowed, nil},
		{"an image outside the policy", map[string]string{config.KeyKubevipChartValues: "image:\n  repository: evil.example.com/kube-vip\n"}, v1.ReasonChartValuesNotAllowed, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := record.NewFakeRecorder(20)
			store := config.NewStore(config.Default())
			h := &handler{namespace: "kube-fip", store: store, policy: policy, recorder: events, metrics: metrics.New()}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-fip", Name: config.ConfigMapName, ResourceVersion: "1"}, Data: tc.data}
			if _, err := h.OnConfigMapChange("kube-fip/"+config.ConfigMapName, cm); err != nil {
				t.Fatal(err)
			}
			var got []string
			for len(events.Events) > 0 {
				got = append(got, <-events.Events)
			}
			found := false
			for _, e := range got {
				found = found || strings.Contains(e, " "+tc.reason+" ")
			}
			if !found {
				t.Errorf("Events %q, want one with reason %s", got, tc.reason)
			}
			if tc.check != nil && !tc.check(store.Get()) {
				t.Errorf("configuration in force: %s", store.Get())
			}
			if _, err := h.OnConfigMapChange("kube-fip/"+config.ConfigMapName, cm); err != nil {
				t.Fatal(err)
			}
			if len(events.Events) != 0 {
				t.Errorf("a resync repeated %q", <-events.Events)
			}
		})
	}
}

// TestGuestChartsFetched: an image without bundled guest charts says so on kube-fip-config while
// the configuration installs the pinned charts, naming each it fetches and from where; not when
// nothing is installed, not for a chart asked from elsewhere, and not when the image ships them.
func TestGuestChartsFetched(t *testing.T) {
	kv, cp := chartrepo.KubevipChart(config.DefaultKubevipChartVersion), chartrepo.KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion)
	dir := t.TempDir()
	for _, c := range []*chart.Chart{kv, cp} {
		if _, err := chartrepo.WriteArchive(c, dir); err != nil {
			t.Fatal(err)
		}
	}
	// The stand-ins play the pinned archives, allowed by their own digests.
	archives, err := chartarchive.New(chartrepo.DigestEntries(kv, cp))
	if err != nil {
		t.Fatal(err)
	}
	shipped, notes, err := archives.LoadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		bundle chartarchive.Bundle
		data   map[string]string
		says   []string
	}{
		{"no bundle, the pinned pair", chartarchive.Bundle{}, nil,
			[]string{"ships no bundled kube-vip 0.9.9 and kube-vip-cloud-provider 0.2.10", "fetches them from https://kube-vip.io/helm-charts"}},
		{"no bundle, kube-vip from an OCI reference", chartarchive.Bundle{},
			map[string]string{config.KeyKubevipChartRef: "oci://ghcr.io/kube-vip/kube-vip", config.KeyKubevipChartVersion: "0.9.9"},
			[]string{"ships no bundled kube-vip-cloud-provider 0.2.10 (", "fetches them from https://kube-vip.io/helm-charts"}},
		{"no bundle, nothing installed", chartarchive.Bundle{}, map[string]string{config.KeyKubevipGuestInstall: "disabled"}, nil},
		{"the charts shipped", shipped, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := record.NewFakeRecorder(20)
			h := &handler{namespace: "kube-fip", store: config.NewStore(config.Default()), policy: installpolicy.Default(), recorder: events,
				metrics: metrics.New(), bundle: tc.bundle}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-fip", Name: config.ConfigMapName, ResourceVersion: "1"}, Data: tc.data}
			if _, err := h.OnConfigMapChange("kube-fip/"+config.ConfigMapName, cm); err != nil {
				t.Fatal(err)
			}
			var fetched []string
			for len(events.Events) > 0 {
				if e := <-events.Events; strings.Contains(e, " "+v1.ReasonGuestChartsFetched+" ") {
					fetched = append(fetched, e)
				}
			}
			if tc.says == nil {
				if len(fetched) != 0 {
					t.Errorf("Events %q; want none %s (bundle notes %q)", fetched, v1.ReasonGuestChartsFetched, notes)
				}
				return
			}
			if len(fetched) != 1 || !strings.HasPrefix(fetched[0], "Warning ") {
				t.Fatalf("Events %q; want one Warning %s", fetched, v1.ReasonGuestChartsFetched)
			}
			for _, s := range tc.says {
				if !strings.Contains(fetched[0], s) {
					t.Errorf("the Event %q does not say %q", fetched[0], s)
				}
			}
		})
	}
}
