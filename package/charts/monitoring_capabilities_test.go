package charts

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kubefip/kube-fip-operator/test/rig"
)

// monitoringSwitches are the values that each render one object of Rancher Monitoring, its kind
// and name. The dashboard is a ConfigMap, but in Rancher Monitoring's namespace, which only
// Rancher Monitoring creates.
var monitoringSwitches = []struct{ value, kind, name string }{
	{"serviceMonitor", "ServiceMonitor", "kube-fip-operator"},
	{"prometheusRule", "PrometheusRule", "kube-fip-operator"},
	{"dashboard", "ConfigMap", "kube-fip-operator-dashboard"},
}

func monitoringOn(part string) map[string]interface{} {
	return map[string]interface{}{"monitoring": map[string]interface{}{part: map[string]interface{}{"enabled": true}}}
}

// TestMonitoringNeedsRancherMonitoring: each monitoring object, the dashboard included, renders
// when the cluster has the monitoring.coreos.com/v1 API; switched on without it, the install fails
// naming the API, Rancher Monitoring and the value to switch off (rather than with the API
// server's bare refusal of a namespace that does not exist). Switched off, nothing needs the API;
// an offline render with validateInstallCRD=false renders the objects without it.
func TestMonitoringNeedsRancherMonitoring(t *testing.T) {
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Render(c, RenderOptions{Namespace: testNamespace, APIVersions: InstallAPIVersions(), KubeVersion: testKubeVersion}); err != nil {
		t.Errorf("defaults without the monitoring API: %v", err)
	}
	for _, sw := range monitoringSwitches {
		t.Run(sw.value, func(t *testing.T) {
			objs, err := Render(c, RenderOptions{Namespace: testNamespace, Values: monitoringOn(sw.value),
				APIVersions: append(InstallAPIVersions(), monitoringAPIVersions...), KubeVersion: testKubeVersion})
			if err != nil {
				t.Fatalf("with the monitoring API: %v", err)
			}
			find(t, objs, sw.kind, sw.name)

			_, err = Render(c, RenderOptions{Namespace: testNamespace, Values: monitoringOn(sw.value),
				APIVersions: InstallAPIVersions(), KubeVersion: testKubeVersion})
			value := "monitoring." + sw.value + ".enabled"
			if err == nil {
				t.Fatal("rendered without the monitoring.coreos.com/v1 API")
			}
			for _, want := range []string{"monitoring.coreos.com/v1", "install Rancher Monitoring first", "set " + value + " to false"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}

			values := monitoringOn(sw.value)
			values["validateInstallCRD"] = false
			objs, err = Render(c, RenderOptions{Namespace: testNamespace, Values: values, KubeVersion: testKubeVersion})
			if err != nil {
				t.Fatalf("offline with validateInstallCRD=false: %v", err)
			}
			find(t, objs, sw.kind, sw.name)
		})
	}
}

// TestRunbookURLs: every alert carries a runbook_url into the project's runbook page on GitHub,
// docs/troubleshooting.md, whose anchor is a heading of its Alert runbooks section, also with
// another base URL.
func TestRunbookURLs(t *testing.T) {
	section, err := rig.DocSection("docs/troubleshooting.md", "## Alert runbooks")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^###\s+(.+)$`).FindAllStringSubmatch(section, -1) {
		anchors[githubAnchor(m[1])] = true
	}
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	for base, values := range map[string]map[string]interface{}{
		c.Metadata.Home + "/blob/main/docs/troubleshooting.md": monitoringOn("prometheusRule"),
		"https://docs.example.com/fip":                         {"monitoring": map[string]interface{}{"runbookBaseURL": "https://docs.example.com/fip/", "prometheusRule": map[string]interface{}{"enabled": true}}},
	} {
		var pr ruleGroups
		convert(t, find(t, renderOperator(t, values), "PrometheusRule", "kube-fip-operator"), &pr)
		n := 0
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				n++
				url := r.Annotations["runbook_url"]
				page, anchor, ok := strings.Cut(url, "#")
				if !ok || page != base || !anchors[anchor] {
					t.Errorf("%s: runbook_url %q; want %s#<a heading of the Alert runbooks of docs/troubleshooting.md>", r.Alert, url, base)
				}
			}
		}
		if n == 0 {
			t.Error("no alert rendered")
		}
	}
}
