package charts

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// testKubeVersion is the Kubernetes version the integration tests run; charts are rendered for it.
const testKubeVersion = "v1.30.14"

const testNamespace = "kube-fip"

func chartDir(name string) string { return filepath.Join("..", "..", "charts", name) }

// allSwitchesOn turns on every optional part of the operator chart and moves every setting the
// templates use away from its default, so that a template ignoring a value shows.
func allSwitchesOn() map[string]interface{} {
	return map[string]interface{}{
		"global":              map[string]interface{}{"cattle": map[string]interface{}{"systemDefaultRegistry": "registry.example.com:5000"}},
		"image":               map[string]interface{}{"tag": "v9.9.9"},
		"imagePullSecrets":    []interface{}{map[string]interface{}{"name": "pull-secret"}},
		"replicas":            3,
		"threads":             7,
		"guestWorkers":        4,
		"guestTimeout":        "30s",
		"kubeAPI":             map[string]interface{}{"qps": 50, "burst": 80},
		"priorityClassName":   "system-cluster-critical",
		"podDisruptionBudget": map[string]interface{}{"enabled": true},
		"affinity": map[string]interface{}{"podAntiAffinity": map[string]interface{}{
			"preferredDuringSchedulingIgnoredDuringExecution": []interface{}{map[string]interface{}{
				"weight": 100,
				"podAffinityTerm": map[string]interface{}{
					"topologyKey":   "kubernetes.io/hostname",
					"labelSelector": map[string]interface{}{"matchLabels": map[string]interface{}{"app.kubernetes.io/name": "kube-fip-operator"}},
				},
			}},
		}},
		"rancher":              map[string]interface{}{"fleetNamespace": "fleet-other", "globalDataNamespace": "global-other"},
		"additionalTrustedCAs": true,
		"proxy":                "http://proxy.example.com:3128",
		"noProxy":              "127.0.0.0/8,.svc,rancher.example.com",
		"ociCharts":            map[string]interface{}{"kubevip": true, "kubevipCloudProvider": true},
		"config": map[string]interface{}{
			"logLevel":                         "Debug",
			"operateGuestClusterInterval":      600,
			"metricsPort":                      9090,
			"traceIpamData":                    true,
			"addressRetention":                 "36h",
			"kubevipGuestInstall":              "enabled",
			"kubevipUpdate":                    true,
			"kubevipChartRef":                  "oci://registry.example.com/charts/kube-vip",
			"kubevipChartVersion":              "0.6.4",
			"kubevipCloudProviderChartRef":     "oci://registry.example.com/charts/kube-vip-cloud-provider",
			"kubevipCloudProviderChartVersion": "0.2.2",
		},
		"monitoring": map[string]interface{}{
			"serviceMonitor": map[string]interface{}{"enabled": true, "labels": map[string]interface{}{"release": "rancher-monitoring"}},
			"prometheusRule": map[string]interface{}{"enabled": true, "rangeUsageWarningPercent": 70, "rangeUsageCriticalPercent": 90},
			"dashboard":      map[string]interface{}{"enabled": true},
		},
	}
}

// monitoringAPIVersions are the Rancher Monitoring APIs the monitoring objects need.
var monitoringAPIVersions = []string{"monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule", "monitoring.coreos.com/v1/Prometheus"}

// renderOperator renders the operator chart offline with the CRD chart's and Rancher Monitoring's
// APIs present.
func renderOperator(t *testing.T, values map[string]interface{}) []*unstructured.Unstructured {
	t.Helper()
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render(c, RenderOptions{
		Namespace:   testNamespace,
		Values:      values,
		APIVersions: append(InstallAPIVersions(), monitoringAPIVersions...),
		KubeVersion: testKubeVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// find returns the rendered object of that kind and name, failing the test when it is missing.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

// ofKind returns every rendered object of a kind.
func ofKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// convert decodes a rendered object into its typed form; unknown fields fail the test, so a typo in
// a template does not pass unnoticed.
func convert(t *testing.T, obj *unstructured.Unstructured, out interface{}) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, out, true); err != nil {
		t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}
