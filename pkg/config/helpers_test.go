package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// previousData differs from the defaults in every key, so a test can tell
// "kept the previous value" from "fell back to the default".
func previousData() map[string]string {
	return map[string]string{
		KeyLogLevel:                         "debug",
		KeyOperateGuestClusterInterval:      "60",
		KeyMetricsPort:                      "9090",
		KeyTraceIPAMData:                    "true",
		KeyAddressRetention:                 "90m",
		KeyServedAddressHold:                "2h",
		KeyKubevipGuestInstall:              "enabled",
		KeyKubevipUpdate:                    "true",
		KeyKubevipNamespace:                 "kube-vip-prev",
		KeyKubevipReleaseName:               "kv-prev",
		KeyKubevipChartRepoURL:              "https://charts.example.com/prev",
		KeyKubevipChartRef:                  "oci://registry.example.com/charts/kube-vip",
		KeyKubevipChartVersion:              "0.8.0",
		KeyKubevipChartValues:               "image:\n  tag: prev\n",
		KeyKubevipCloudProviderReleaseName:  "kvcp-prev",
		KeyKubevipCloudProviderChartRef:     "oci://registry.example.com/charts/kube-vip-cloud-provider",
		KeyKubevipCloudProviderChartVersion: "v0.0.10",
		KeyKubevipCloudProviderChartValues:  "image:\n  tag: prevcp\n",
	}
}

func previousConfig(t testing.TB) Config {
	t.Helper()
	c, problems := Parse(previousData(), Default())
	if len(problems) != 0 {
		t.Fatalf("previous config has problems: %v", problems)
	}
	return c
}

// render is Parse's inverse: ConfigMap data that parses back to c.
func render(c Config) map[string]string {
	data := map[string]string{}
	for _, o := range allOptions() {
		data[o.key] = o.get(c)
	}
	return data
}

// checkValid asserts the invariants every Parse result must satisfy.
func checkValid(t *testing.T, c Config) {
	t.Helper()
	validLevel := false
	for _, l := range logrus.AllLevels {
		validLevel = validLevel || l == c.LogLevel
	}
	if !validLevel {
		t.Errorf("LogLevel %d is not a logrus level", c.LogLevel)
	}
	if d := c.OperateGuestClusterInterval; d < time.Second || d > MaxOperateGuestClusterInterval || d%time.Second != 0 {
		t.Errorf("OperateGuestClusterInterval %v out of range", d)
	}
	if d := c.AddressRetention; d < 0 || d > MaxAddressRetention {
		t.Errorf("AddressRetention %v out of range", d)
	}
	if c.MetricsPort < 1 || c.MetricsPort > 65535 {
		t.Errorf("MetricsPort %d out of range", c.MetricsPort)
	}
	if !c.KubevipGuestInstall.valid() {
		t.Errorf("KubevipGuestInstall %q invalid", c.KubevipGuestInstall)
	}
	if c.Kubevip.Values == nil || c.KubevipCloudProvider.Values == nil {
		t.Errorf("nil chart values")
	}
	if c.Kubevip.RepoURL != c.KubevipCloudProvider.RepoURL {
		t.Errorf("charts disagree on RepoURL: %q vs %q", c.Kubevip.RepoURL, c.KubevipCloudProvider.RepoURL)
	}
	// Every field must survive a trip through the ConfigMap unchanged; this
	// re-runs every validator on every field.
	again, problems := Parse(render(c), Default())
	if !reflect.DeepEqual(again, c) {
		t.Errorf("round trip changed config:\n got %v\nwant %v", again, c)
	}
	for _, p := range problems {
		if !strings.HasPrefix(p.Message, "incomplete chart selection") {
			t.Errorf("round trip problem: %v", p)
		}
	}
}

func problemKeys(problems []KeyProblem) []string {
	keys := []string{}
	for _, p := range problems {
		keys = append(keys, p.Key)
	}
	return keys
}
