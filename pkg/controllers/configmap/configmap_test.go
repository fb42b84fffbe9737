package configmap

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
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
