package charts

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubefip/kube-fip-operator/pkg/config"
)

// renderConfig renders kube-fip-config and parses it the way the operator does.
func renderConfig(t *testing.T, values map[string]interface{}) (map[string]string, config.Config) {
	t.Helper()
	var cm corev1.ConfigMap
	convert(t, find(t, renderOperator(t, values), "ConfigMap", config.ConfigMapName), &cm)
	if cm.Namespace != testNamespace {
		t.Errorf("%s in namespace %q; want the release namespace %q", config.ConfigMapName, cm.Namespace, testNamespace)
	}
	for _, key := range config.Keys() {
		if _, ok := cm.Data[key]; !ok {
			t.Errorf("%s has no key %s", config.ConfigMapName, key)
		}
	}
	if len(cm.Data) != len(config.Keys()) {
		t.Errorf("%s has %d keys; want the %d options", config.ConfigMapName, len(cm.Data), len(config.Keys()))
	}
	cfg, problems := config.Parse(cm.Data, config.Default())
	for _, p := range problems {
		t.Errorf("rendered %s: %v (warning: %v)", config.ConfigMapName, p, p.Warning)
	}
	return cm.Data, cfg
}

// TestConfigMapDefaults: the chart's kube-fip-config holds every option, parses without a single
// problem, and is exactly the operator's built-in default configuration (the original's defaults).
func TestConfigMapDefaults(t *testing.T) {
	_, cfg := renderConfig(t, nil)
	if !cfg.Equal(config.Default()) {
		t.Errorf("the chart's default configuration differs from the operator's:\nchart:    %s\noperator: %s", cfg, config.Default())
	}
}

// TestConfigMapFromValues: values of every type (numbers, booleans, strings, YAML text) land in the
// ConfigMap as strings the operator parses to the values given.
func TestConfigMapFromValues(t *testing.T) {
	data, cfg := renderConfig(t, allSwitchesOn())
	for key, want := range map[string]string{
		config.KeyOperateGuestClusterInterval: "600",
		config.KeyMetricsPort:                 "9090",
		config.KeyTraceIPAMData:               "true",
		config.KeyAddressRetention:            "36h",
		config.KeyKubevipUpdate:               "true",
	} {
		if data[key] != want {
			t.Errorf("%s = %q; want %q", key, data[key], want)
		}
	}
	switch {
	case cfg.OperateGuestClusterInterval != 600*time.Second:
		t.Errorf("interval %s", cfg.OperateGuestClusterInterval)
	case cfg.AddressRetention != 36*time.Hour:
		t.Errorf("address retention %s", cfg.AddressRetention)
	case cfg.MetricsPort != 9090 || !cfg.TraceIPAMData || !cfg.KubevipUpdate:
		t.Errorf("metricsPort %d, traceIpamData %v, kubevipUpdate %v", cfg.MetricsPort, cfg.TraceIPAMData, cfg.KubevipUpdate)
	case cfg.KubevipGuestInstall != config.InstallEnabled || cfg.LogLevel.String() != "debug":
		t.Errorf("kubevipGuestInstall %q, logLevel %s", cfg.KubevipGuestInstall, cfg.LogLevel)
	case cfg.Kubevip.Ref != "oci://registry.example.com/charts/kube-vip" || cfg.Kubevip.Version != "0.6.4":
		t.Errorf("kube-vip chart %s", cfg.Kubevip)
	case cfg.KubevipCloudProvider.Ref != "oci://registry.example.com/charts/kube-vip-cloud-provider" || cfg.KubevipCloudProvider.Version != "0.2.2":
		t.Errorf("kube-vip-cloud-provider chart %s", cfg.KubevipCloudProvider)
	}
}

// TestConfigMapAddressRetention: config.addressRetention reaches kube-fip-config as written,
// whether as a duration or, as YAML turns a bare number into, an integer number of seconds; 0
// turns retention off.
func TestConfigMapAddressRetention(t *testing.T) {
	for _, tc := range []struct {
		value interface{}
		data  string
		want  time.Duration
	}{
		{"90m", "90m", 90 * time.Minute},
		{3600, "3600", time.Hour},
		{0, "0", 0},
		{"0s", "0s", 0},
		{"8760h", "8760h", config.MaxAddressRetention},
	} {
		data, cfg := renderConfig(t, map[string]interface{}{"config": map[string]interface{}{"addressRetention": tc.value}})
		if data[config.KeyAddressRetention] != tc.data || cfg.AddressRetention != tc.want {
			t.Errorf("config.addressRetention %#v: %s %q, retention %s; want %q, %s",
				tc.value, config.KeyAddressRetention, data[config.KeyAddressRetention], cfg.AddressRetention, tc.data, tc.want)
		}
	}
}

// TestConfigMapOCISwitch: ociCharts.<chart> decides whether the OCI reference reaches
// kube-fip-config. Off, a reference left in the values (the Rancher form keeps the answers of the
// fields it hides) is written empty and the chart comes from the Helm repository, at the version
// the values pin; on without a reference or version, the install fails with the values to set.
func TestConfigMapOCISwitch(t *testing.T) {
	refs := map[string]interface{}{
		"kubevipChartRef":                  "oci://registry.example.com/charts/kube-vip",
		"kubevipChartVersion":              "0.6.4",
		"kubevipCloudProviderChartRef":     "oci://registry.example.com/charts/kube-vip-cloud-provider",
		"kubevipCloudProviderChartVersion": "0.2.2",
	}
	data, cfg := renderConfig(t, map[string]interface{}{
		"ociCharts": map[string]interface{}{"kubevip": false, "kubevipCloudProvider": true},
		"config":    refs,
	})
	if data[config.KeyKubevipChartRef] != "" {
		t.Errorf("ociCharts.kubevip off: %s = %q; want it empty", config.KeyKubevipChartRef, data[config.KeyKubevipChartRef])
	}
	if cfg.Kubevip.Ref != "" || cfg.Kubevip.Version != "0.6.4" ||
		cfg.KubevipCloudProvider.Ref != refs["kubevipCloudProviderChartRef"] || cfg.KubevipCloudProvider.Version != "0.2.2" {
		t.Errorf("kube-vip chart %s, kube-vip-cloud-provider chart %s", cfg.Kubevip, cfg.KubevipCloudProvider)
	}

	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	for name, cfgValues := range map[string]map[string]interface{}{
		"no reference": {"kubevipCloudProviderChartVersion": "0.2.2"},
		"no version":   {"kubevipCloudProviderChartRef": "oci://registry.example.com/charts/kube-vip-cloud-provider"},
	} {
		_, err := Render(c, RenderOptions{
			Namespace:   testNamespace,
			Values:      map[string]interface{}{"ociCharts": map[string]interface{}{"kubevipCloudProvider": true}, "config": cfgValues},
			APIVersions: InstallAPIVersions(),
			KubeVersion: testKubeVersion,
		})
		want := "ociCharts.kubevipCloudProvider is on: set config.kubevipCloudProviderChartRef"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: render error %v; want %q", name, err, want)
		}
	}
}

// TestConfigMapRepositoryChartVersion: with the OCI switches off, a chart version in the values
// reaches kube-fip-config and pins the Helm repository's chart, as kube-fip-config's own
// documentation says (a version without a reference needs none); an empty one leaves the
// operator's pinned versions.
func TestConfigMapRepositoryChartVersion(t *testing.T) {
	data, cfg := renderConfig(t, map[string]interface{}{
		"ociCharts": map[string]interface{}{"kubevip": false, "kubevipCloudProvider": false},
		"config":    map[string]interface{}{"kubevipChartVersion": "0.9.8", "kubevipCloudProviderChartVersion": "0.2.9"},
	})
	for key, want := range map[string]string{config.KeyKubevipChartVersion: "0.9.8", config.KeyKubevipCloudProviderChartVersion: "0.2.9"} {
		if data[key] != want {
			t.Errorf("OCI off: %s = %q; want %q, the version pinned for the repository's chart", key, data[key], want)
		}
	}
	def := config.Default()
	if cfg.Kubevip.Ref != "" || cfg.Kubevip.RepoURL != def.Kubevip.RepoURL || cfg.Kubevip.Version != "0.9.8" {
		t.Errorf("kube-vip chart %s; want %s at 0.9.8", cfg.Kubevip, def.Kubevip.RepoURL)
	}
	if cfg.KubevipCloudProvider.Ref != "" || cfg.KubevipCloudProvider.Version != "0.2.9" {
		t.Errorf("kube-vip-cloud-provider chart %s; want the repository's at 0.2.9", cfg.KubevipCloudProvider)
	}
	if _, cfg := renderConfig(t, nil); cfg.Kubevip.Version != def.Kubevip.Version || cfg.KubevipCloudProvider.Version != def.KubevipCloudProvider.Version {
		t.Errorf("no version given: %s and %s; want the pinned %s and %s", cfg.Kubevip.Version, cfg.KubevipCloudProvider.Version,
			def.Kubevip.Version, def.KubevipCloudProvider.Version)
	}
}
