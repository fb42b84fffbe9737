package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

func TestDefault(t *testing.T) {
	t.Parallel()
	d := Default()
	checkValid(t, d)
	if d.LogLevel != logrus.InfoLevel || d.OperateGuestClusterInterval != 480*time.Second || d.MetricsPort != 8080 ||
		d.TraceIPAMData || d.KubevipGuestInstall != InstallClusterLabel || d.KubevipUpdate ||
		d.KubevipNamespace != "kube-system" || d.AddressRetention != 24*time.Hour {
		t.Errorf("scalar defaults changed: %v", d)
	}
	wantKV := Chart{
		ReleaseName: "kube-vip",
		RepoURL:     "https://kube-vip.io/helm-charts",
		Version:     "0.9.9",
		Values: map[string]interface{}{
			"image":        map[string]interface{}{"repository": DefaultKubevipImageRepository, "tag": DefaultKubevipImageTag},
			"env":          map[string]interface{}{"vip_interface": "enp1s0", "prometheus_server": ":8080"},
			"nodeSelector": map[string]interface{}{"node-role.kubernetes.io/master": "true"},
		},
		ValuesYAML: DefaultKubevipChartValues,
	}
	if !reflect.DeepEqual(d.Kubevip, wantKV) {
		t.Errorf("kube-vip chart default:\n got %#v\nwant %#v", d.Kubevip, wantKV)
	}
	wantCP := Chart{
		ReleaseName: "kube-vip-cloud-provider",
		RepoURL:     "https://kube-vip.io/helm-charts",
		Version:     "0.2.10",
		Values: map[string]interface{}{
			"image": map[string]interface{}{"repository": DefaultKubevipCloudProviderImageRepository, "tag": DefaultKubevipCloudProviderImageTag},
			"tolerations": []interface{}{
				map[string]interface{}{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
				map[string]interface{}{"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"},
			},
		},
		ValuesYAML: DefaultKubevipCloudProviderChartValues,
	}
	if !reflect.DeepEqual(d.KubevipCloudProvider, wantCP) {
		t.Errorf("cloud provider chart default:\n got %#v\nwant %#v", d.KubevipCloudProvider, wantCP)
	}
	// The pinned pair names each image by its release and the digest of its index.
	for _, ref := range []string{DefaultKubevipImage, DefaultKubevipCloudProviderImage} {
		name, digest, pinned := strings.Cut(ref, "@sha256:")
		if !pinned || len(digest) != 64 || strings.Trim(digest, "0123456789abcdef") != "" || !strings.Contains(name, ":v") {
			t.Errorf("%s is not named by a release tag and a sha256 digest", ref)
		}
	}
}

// TestKeys: every key released so far (the original kube-fip-operator's among them, a
// compatibility contract) is still known, spelt as it was and in the table's order, and each key
// is in the table once. A new key may go anywhere in the table.
func TestKeys(t *testing.T) {
	t.Parallel()
	released := []string{
		"logLevel", "operateGuestClusterInterval", "metricsPort", "traceIpamData", "addressRetention", "kubevipGuestInstall",
		"kubevipUpdate", "kubevipNamespace", "kubevipReleaseName", "kubevipChartRepoUrl", "kubevipChartRef",
		"kubevipChartVersion", "kubevipChartValues", "kubevipCloudProviderReleaseName",
		"kubevipCloudProviderChartRef", "kubevipCloudProviderChartVersion", "kubevipCloudProviderChartValues",
	}
	keys := Keys()
	at := map[string]int{}
	for i, k := range keys {
		if _, dup := at[k]; dup {
			t.Errorf("key %s is in the table twice", k)
		}
		at[k] = i
	}
	last := -1
	for _, k := range released {
		i, ok := at[k]
		if !ok {
			t.Errorf("released key %s is missing", k)
		} else if i < last {
			t.Errorf("key %s is out of the table's order", k)
		}
		last = i
	}
	keys[0] = "mutated"
	if Keys()[0] != "logLevel" {
		t.Error("Keys shares its slice between calls")
	}
}

func TestInstallModeWants(t *testing.T) {
	t.Parallel()
	labelled := map[string]string{"kube-vip": "true"}
	tests := []struct {
		mode   InstallMode
		labels map[string]string
		want   bool
	}{
		{InstallEnabled, nil, true},
		{InstallEnabled, map[string]string{"kube-vip": "false"}, true},
		{InstallDisabled, labelled, false},
		{InstallDisabled, nil, false},
		{InstallClusterLabel, labelled, true},
		// strconv.ParseBool, as the original operator read the label.
		{InstallClusterLabel, map[string]string{"kube-vip": "True"}, true},
		{InstallClusterLabel, map[string]string{"kube-vip": "1"}, true},
		{InstallClusterLabel, map[string]string{"kube-vip": "yes"}, false},
		{InstallClusterLabel, map[string]string{"kube-vip": "false"}, false},
		{InstallClusterLabel, map[string]string{"other": "true"}, false},
		{InstallClusterLabel, nil, false},
		{InstallMode("bogus"), labelled, false},
		{InstallMode(""), labelled, false},
	}
	for _, tt := range tests {
		if got := tt.mode.Wants(tt.labels); got != tt.want {
			t.Errorf("%q.Wants(%v) = %t, want %t", tt.mode, tt.labels, got, tt.want)
		}
	}
}

func TestEqual(t *testing.T) {
	t.Parallel()
	if !Default().Equal(Default()) {
		t.Error("Default() != Default()")
	}
	a, _ := Parse(previousData(), Default())
	b, _ := Parse(previousData(), Default())
	if !a.Equal(b) {
		t.Error("equal parses differ")
	}
	changed := func(k, v string) Config {
		d := previousData()
		d[k] = v
		c, _ := Parse(d, Default())
		return c
	}
	for k, v := range map[string]string{
		KeyMetricsPort:        "9091",
		KeyKubevipChartValues: "image:\n  tag: prev\n# comment\n",
		KeyLogLevel:           "trace",
	} {
		if a.Equal(changed(k, v)) {
			t.Errorf("changing %s not detected", k)
		}
	}
}

func TestString(t *testing.T) {
	t.Parallel()
	data := previousData()
	data[KeyKubevipChartValues] = "image:\n  tag: prev\nregistry:\n  password: hunter2\n"
	c, _ := Parse(data, Default())
	s := c.String()
	for _, want := range []string{
		"logLevel=debug", "operateGuestClusterInterval=1m0s", "metricsPort=9090", "addressRetention=1h30m0s", "kubevipGuestInstall=enabled",
		`kubevipNamespace="kube-vip-prev"`, `releaseName="kv-prev"`, `version="0.8.0"`,
		`keys "image,registry"`, `releaseName="kvcp-prev"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("String() lacks %q: %s", want, s)
		}
	}
	for _, leak := range []string{"hunter2", "password", "prev\n", "tag"} {
		if strings.Contains(s, leak) {
			t.Errorf("String() shows chart values (%q): %s", leak, s)
		}
	}
}

// TestTableDefaultsAreTheDefault: the defaults the table documents (and the chart writes) parse,
// without a problem, to Default, and each option's schema and type for the chart is set.
func TestTableDefaultsAreTheDefault(t *testing.T) {
	t.Parallel()
	data := map[string]string{}
	for _, o := range Documentation() {
		data[o.Key] = o.Default
		if o.Doc == "" || o.ValuesType == "" || len(o.Schema) < 2 {
			t.Errorf("%s: the table gives no documentation, values type or schema", o.Key)
		}
	}
	cfg, problems := Parse(data, Config{})
	for _, p := range problems {
		t.Errorf("the documented default: %v", p)
	}
	if !cfg.Equal(Default()) {
		t.Errorf("the documented defaults parse to\n%s\nnot Default()\n%s", cfg, Default())
	}
}
