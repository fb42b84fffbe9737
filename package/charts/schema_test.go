package charts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/kubefip/kube-fip-operator/pkg/config"
)

// Every render of the operator chart in these tests (Render, renderRelease) goes through Helm's
// install, which validates the values against values.schema.json first: each values set the tests
// render is accepted by the schema, or its test fails. The tests below add what the renders do
// not show: the forms the schema accepts beyond them, and the mistakes it refuses.

// validateValues checks values the way `helm install` does: merged over the chart's values.yaml,
// then validated against the chart's schema with Helm's own validator.
func validateValues(t *testing.T, c *chart.Chart, values map[string]interface{}) error {
	t.Helper()
	merged, err := chartutil.CoalesceValues(c, deepCopyValues(values))
	if err != nil {
		t.Fatal(err)
	}
	return chartutil.ValidateAgainstSchema(c, merged)
}

func loadOperatorChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	if c.Schema == nil {
		t.Fatal("the operator chart has no values.schema.json")
	}
	return c
}

// nested builds {"a": {"b": v}} from the path "a.b".
func nested(path string, v interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	setValue(out, path, v)
	return out
}

// TestSchemaAcceptsValidValues: the defaults, every switch on, Rancher's global values and the
// several forms the operator and the templates accept for a value.
func TestSchemaAcceptsValidValues(t *testing.T) {
	c := loadOperatorChart(t)
	cases := map[string]map[string]interface{}{
		"defaults":       nil,
		"all switches":   allSwitchesOn(),
		"Rancher global": {"global": map[string]interface{}{"cattle": map[string]interface{}{"systemDefaultRegistry": "", "clusterId": "local", "clusterName": "local", "url": "https://rancher.example.com", "rkePathPrefix": ""}, "systemDefaultRegistry": ""}},
	}
	for path, vs := range map[string][]interface{}{
		"replicas":                           {0, 5},
		"image.tag":                          {"v1.2.3"},
		"image.pullPolicy":                   {"Always", "Never"},
		"guestTimeout":                       {"1m30s", "500ms"},
		"kubeAPI.qps":                        {12.5},
		"podDisruptionBudget.maxUnavailable": {0, "50%"},
		"nodeSelector":                       {map[string]interface{}{}},
		"tolerations":                        {[]interface{}{}},
		"security.allowedChartSources":       {"", []interface{}{}, []interface{}{"https://charts.example.com", "oci://registry.example.com:5000/charts"}},
		"security.allowedImagePrefixes":      {[]interface{}{"registry.example.com/kube-vip"}},
		"security.chartCredentialsSecret":    {"chart-pull", "chart.pull"},
		"security.allowedChartDigests": {"", []interface{}{}, "kube-vip@sha256:" + strings.Repeat("0a", 32),
			"kube-vip@sha256:" + strings.Repeat("0a", 32) + ", kube-vip-cloud-provider@sha256:" + strings.Repeat("1b", 32),
			[]interface{}{"kube-vip-cloud-provider@sha256:" + strings.Repeat("1b", 32)}},
		"helmCacheSizeLimit":                                 {"1Gi", "500M", "", 1073741824},
		"config.logLevel":                                    {"Trace", "debug", "WARNING", "fatal", " Info ", ""},
		"config.operateGuestClusterInterval":                 {1, 86400, "600"},
		"config.traceIpamData":                               {"true", "False", "1", "t", ""},
		"config.addressRetention":                            {"90m", "1h30m", "0s", "8760h", 3600, 0, 31536000, ""},
		"config.kubevipGuestInstall":                         {"enabled", "disabled", "clusterlabel", "Enabled", " DISABLED ", ""},
		"config.kubevipUpdate":                               {true, "TRUE", "0"},
		"config.kubevipNamespace":                            {"kube-vip", ""},
		"config.kubevipReleaseName":                          {"kube-vip.v2"},
		"config.kubevipChartRepoUrl":                         {"http://charts.example.com:8080/helm", ""},
		"config.kubevipChartVersion":                         {"v0.8.0-rc.1", "0.6"},
		"config.kubevipChartValues":                          {"", "env:\n  vip_interface: eth0\n"},
		"monitoring.serviceMonitor.interval":                 {"1m", "1m30s"},
		"monitoring.serviceMonitor.labels":                   {map[string]interface{}{"release": "rancher-monitoring"}},
		"monitoring.prometheusRule.rangeUsageWarningPercent": {50.5, 100},
		"cleanup.onUninstall":                                {"delete"},
		"cleanup.stopTimeout":                                {"5m", ""},
	} {
		for _, v := range vs {
			cases[path+"="+jsonText(v)] = nested(path, v)
		}
	}
	for name, values := range cases {
		if err := validateValues(t, c, values); err != nil {
			t.Errorf("%s: refused: %v", name, err)
		}
	}
}

// TestSchemaRefusesMistakes: a value of the wrong type, out of range, outside a closed set, or a
// key the chart does not know is refused, naming where.
func TestSchemaRefusesMistakes(t *testing.T) {
	c := loadOperatorChart(t)
	for _, tc := range []struct {
		path string
		v    interface{}
	}{
		{"replicas", "3"},
		{"replicas", -1},
		{"replicas", 1.5},
		{"leaderElection", "yes"},
		{"threads", 0},
		{"guestTimeout", 15},
		{"guestTimeout", "15"},
		{"kubeAPI.qps", -1},
		{"image.pullPolicy", "Sometimes"},
		{"imagePullSecrets", []interface{}{"pull-secret"}},
		{"podDisruptionBudget.maxUnavailable", -1},
		{"rancher.fleetNamespace", "Fleet_Default"},
		{"rancher.fleetNamespace", ""},
		{"security.allowHTTPChartSources", "true"},
		{"security.allowedChartDigests", "kube-vip@sha256:" + strings.Repeat("0A", 32)},
		{"security.allowedChartDigests", "nginx@sha256:" + strings.Repeat("0a", 32)},
		{"security.allowedChartDigests", "kube-vip@" + strings.Repeat("0a", 32)},
		{"security.allowedChartDigests", []interface{}{"kube-vip@sha256:0a"}},
		{"security.allowedChartDigests", "kube-vip@sha256:" + strings.Repeat("0a", 32) + ";kube-vip@sha256:" + strings.Repeat("0b", 32)},
		{"security.chartCredentialsSecret", "My Secret"},
		{"ociCharts.kubevipChart", true},
		{"config.kubevipGuestInstall", "enable"},
		{"config.kubevipGuestInstall", "all"},
		{"config.kubevipGuestInstall", true},
		{"config.logLevel", "verbose"},
		{"config.metricsPort", -1},
		{"config.metricsPort", 0},
		{"config.metricsPort", 70000},
		{"config.metricsPort", "8080"},
		{"config.operateGuestClusterInterval", 0},
		{"config.operateGuestClusterInterval", 86401},
		{"config.operateGuestClusterInterval", "8m"},
		{"config.traceIpamData", "yes"},
		{"config.addressRetention", "1M"},
		{"config.addressRetention", "1d"},
		{"config.addressRetention", -1},
		{"config.kubevipNamespace", "Kube-System"},
		{"config.kubevipChartRepoUrl", "kube-vip.io/helm-charts"},
		{"config.kubevipChartRef", "ghcr.io/kube-vip/kube-vip"},
		{"config.kubevipChartVersion", "^0.6"},
		{"config.kubevipChartValues", map[string]interface{}{"env": map[string]interface{}{"vip_interface": "eth0"}}},
		{"config.kubevipGuestinstall", "enabled"},
		{"monitoring.serviceMonitor.interval", "30"},
		{"monitoring.prometheusRule.rangeUsageCriticalPercent", 101},
		{"monitoring.dashboard.namespace", "Cattle Dashboards"},
		{"backup.resourceSet.enabled", "true"},
		{"cleanup.onUninstall", "purge"},
		{"cleanup.stopTimeout", "2 minutes"},
		{"replica", 2},
	} {
		err := validateValues(t, c, nested(tc.path, tc.v))
		name := tc.path + "=" + jsonText(tc.v)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		// The error points at the value (or inside it), or at the object holding an unknown key.
		at := "at '/" + strings.ReplaceAll(tc.path, ".", "/")
		parent := "at ''"
		if i := strings.LastIndex(tc.path, "."); i > 0 {
			parent = "at '/" + strings.ReplaceAll(tc.path[:i], ".", "/") + "'"
		}
		unknownKey := strings.Contains(err.Error(), parent) && strings.Contains(err.Error(), "'"+tc.path[strings.LastIndex(tc.path, ".")+1:]+"' not allowed")
		if !strings.Contains(err.Error(), at) && !unknownKey {
			t.Errorf("%s: error does not point at %s: %v", name, at, err)
		}
	}
}

// TestSchemaCoversValues: the schema describes exactly the chart's values and the operator's
// ConfigMap options, so a value added to values.yaml or an option added to the operator cannot
// miss its schema (the defaults would be refused) nor leave a stale entry behind.
func TestSchemaCoversValues(t *testing.T) {
	c := loadOperatorChart(t)
	var schema struct {
		Schema     string `json:"$schema"`
		Properties map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(c.Schema, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Schema != "http://json-schema.org/draft-07/schema#" {
		t.Errorf("$schema %q; want draft-07", schema.Schema)
	}
	data, err := os.ReadFile(filepath.Join(chartDir(OperatorChart), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	values, err := chartutil.ReadValues(data)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeys(schema.Properties), sortedKeys(values); !slices.Equal(got, want) {
		t.Errorf("schema describes %v; values.yaml has %v", got, want)
	}
	keys := config.Keys()
	sort.Strings(keys)
	if got := sortedKeys(schema.Properties["config"].Properties); !slices.Equal(got, keys) {
		t.Errorf("schema's config describes %v; the operator's options are %v", got, keys)
	}
}

// TestSchemaAcceptsQuestions: every answer the Rancher form offers passes the schema: each
// question's default, each option of an enum, and the bounds of an int.
func TestSchemaAcceptsQuestions(t *testing.T) {
	c := loadOperatorChart(t)
	questions, _ := loadQuestions(t)
	for _, q := range flattenQuestions(questions, nil) {
		var answers []interface{}
		if q.Default != nil {
			answers = append(answers, q.Default)
		}
		for _, o := range q.Options {
			answers = append(answers, o)
		}
		for _, bound := range []*int{q.Min, q.Max} {
			if bound != nil {
				answers = append(answers, *bound)
			}
		}
		for _, a := range answers {
			values := nested(q.Variable, a)
			if q.Variable == "replicas" {
				values["leaderElection"] = true
			}
			if err := validateValues(t, c, values); err != nil {
				t.Errorf("%s=%s: refused: %v", q.Variable, jsonText(a), err)
			}
		}
	}
}

func jsonText(v interface{}) string {
	data, _ := json.Marshal(v)
	return string(data)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
