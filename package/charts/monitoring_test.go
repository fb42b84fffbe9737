package charts

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/test/rig/alerts"
)

// alertRule is one rule of the rendered PrometheusRule.
type alertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type ruleGroups struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Groups []struct {
			Name  string      `json:"name"`
			Rules []alertRule `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// TestPrometheusRule parses every alert expression with Prometheus' own parser, checks each reads
// only metrics the operator exports, and checks what each alert is for: the usage thresholds from
// the values, exhaustion, a guest cluster down for two intervals of the rendered configuration,
// allocation conflicts, and the durations of the not-served and kube-vip-not-installed alerts.
func TestPrometheusRule(t *testing.T) {
	exported := exportedMetrics(t)
	for _, tc := range []struct {
		name                   string
		values                 map[string]interface{}
		warn, crit             float64
		guestDownFor           time.Duration
		wantPrometheusRule     bool
		notServedFor           time.Duration
		kubevipNotInstalledFor time.Duration
	}{
		{"defaults", nil, 0, 0, 0, false, 0, 0},
		{"rule-on", map[string]interface{}{"monitoring": map[string]interface{}{"prometheusRule": map[string]interface{}{"enabled": true}}},
			80, 95, 960 * time.Second, true, 10 * time.Minute, 15 * time.Minute},
		// Labels for a Prometheus whose ruleSelector asks for them: every alert is still rendered.
		{"rule-with-labels", map[string]interface{}{"monitoring": map[string]interface{}{"prometheusRule": map[string]interface{}{"enabled": true,
			"labels": map[string]interface{}{"release": "rancher-monitoring", "team": "network"}, "notServedFor": "20m", "kubevipNotInstalledFor": "1h"}}},
			80, 95, 960 * time.Second, true, 20 * time.Minute, time.Hour},
		{"all-switches", allSwitchesOn(), 70, 90, 1200 * time.Second, true, 10 * time.Minute, 15 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderOperator(t, tc.values)
			rules := ofKind(objs, "PrometheusRule")
			if !tc.wantPrometheusRule {
				if len(rules) != 0 {
					t.Fatal("PrometheusRule rendered while switched off")
				}
				return
			}
			var svc corev1.Service
			convert(t, find(t, objs, "Service", "kube-fip-operator-metrics"), &svc)
			_, cfg := renderConfig(t, tc.values)
			if 2*cfg.OperateGuestClusterInterval != tc.guestDownFor {
				t.Fatalf("test table: guest-down duration %s is not twice the configured interval %s", tc.guestDownFor, cfg.OperateGuestClusterInterval)
			}
			var pr ruleGroups
			convert(t, find(t, objs, "PrometheusRule", "kube-fip-operator"), &pr)
			if labels, _, _ := unstructured.NestedStringMap(tc.values, "monitoring", "prometheusRule", "labels"); len(labels) > 0 {
				for k, v := range labels {
					if pr.Labels[k] != v {
						t.Errorf("the PrometheusRule's labels %v lack %s=%s", pr.Labels, k, v)
					}
				}
			}
			got := map[string]alertRule{}
			for _, g := range pr.Spec.Groups {
				for _, r := range g.Rules {
					got[r.Alert] = r
				}
			}
			checks := map[string]func(alertRule, query){
				"KubeFIPRangeUsageHigh":     usageAlert(t, tc.warn, "warning"),
				"KubeFIPRangeUsageCritical": usageAlert(t, tc.crit, "critical"),
				"KubeFIPRangeExhausted": func(r alertRule, q query) {
					if !q.reads("kubefipoperator_fipranges_available", "kubefipoperator_fipranges_capacity") || !strings.Contains(q.text, "== 0") {
						t.Errorf("%s: %q does not test for no free address in a range with capacity", r.Alert, r.Expr)
					}
				},
				"KubeFIPGuestClusterDown": func(r alertRule, q query) {
					d, err := model.ParseDuration(r.For)
					if err != nil || time.Duration(d) != tc.guestDownFor || !q.reads("kubefipoperator_guestcluster_status") {
						t.Errorf("%s: %q for %q (%v); want kubefipoperator_guestcluster_status for %s", r.Alert, r.Expr, r.For, err, tc.guestDownFor)
					}
				},
				"KubeFIPAllocationConflicts": func(r alertRule, q query) {
					if !q.calls("increase") || !q.reads("kubefipoperator_allocation_conflicts_total") {
						t.Errorf("%s: %q is not an increase of kubefipoperator_allocation_conflicts_total", r.Alert, r.Expr)
					}
				},
				"KubeFIPOperatorMetricsAbsent": func(r alertRule, q query) {
					d, err := model.ParseDuration(r.For)
					if err != nil || time.Duration(d) < 10*time.Minute || time.Duration(d) > 15*time.Minute || !q.calls("absent") ||
						!q.selects("up", "job", svc.Name) || !q.selects("up", "namespace", testNamespace) {
						t.Errorf("%s: %q for %q; want absent(up) of job %s in %s for 10 to 15 minutes", r.Alert, r.Expr, r.For, svc.Name, testNamespace)
					}
				},
				"KubeFIPFloatingIPNotReady": func(r alertRule, q query) {
					d, err := model.ParseDuration(r.For)
					op, val, ok := q.threshold()
					if err != nil || time.Duration(d) != 15*time.Minute || !q.reads("kubefipoperator_floatingip_ready") ||
						!ok || op.String() != "==" || val != 0 {
						t.Errorf("%s: %q for %q; want kubefipoperator_floatingip_ready == 0 for 15m", r.Alert, r.Expr, r.For)
					}
				},
				"KubeFIPAddressInUseOnNetwork": func(r alertRule, q query) {
					op, val, ok := q.threshold()
					if !q.reads("kubefipoperator_fipranges_in_use_elsewhere") || !ok || op.String() != ">" || val != 0 || r.Labels["severity"] != "critical" {
						t.Errorf("%s: %q; want kubefipoperator_fipranges_in_use_elsewhere > 0, critical", r.Alert, r.Expr)
					}
				},
				"KubeFIPFloatingIPNotServed": func(r alertRule, q query) {
					d, err := model.ParseDuration(r.For)
					op, val, ok := q.threshold()
					if err != nil || time.Duration(d) != tc.notServedFor || !q.reads("kubefipoperator_floatingip_served") ||
						!ok || op.String() != "==" || val != 0 || r.Labels["severity"] != "critical" {
						t.Errorf("%s: %q for %q; want kubefipoperator_floatingip_served == 0 for %s, critical", r.Alert, r.Expr, r.For, tc.notServedFor)
					}
				},
				"KubeFIPKubevipNotInstalled": func(r alertRule, q query) {
					d, err := model.ParseDuration(r.For)
					op, val, ok := q.threshold()
					if err != nil || time.Duration(d) != tc.kubevipNotInstalledFor || !q.reads("kubefipoperator_floatingip_kubevip_installed") ||
						!ok || op.String() != "==" || val != metrics.KubevipInstalledNo || r.Labels["severity"] != "warning" {
						t.Errorf("%s: %q for %q; want kubefipoperator_floatingip_kubevip_installed == 0 for %s, warning", r.Alert, r.Expr, r.For, tc.kubevipNotInstalledFor)
					}
					checkKubevipNotInstalledHolds(t, r.Expr)
				},
			}
			if len(got) != len(checks) {
				t.Errorf("%d alerts rendered; want %d", len(got), len(checks))
			}
			for name, check := range checks {
				r, ok := got[name]
				if !ok {
					t.Errorf("alert %s missing", name)
					continue
				}
				check(r, mustParseQuery(t, r.Expr, withScrapeSeries(exported)))
				if _, err := model.ParseDuration(r.For); r.For != "" && err != nil {
					t.Errorf("%s: for %q: %v", name, r.For, err)
				}
				if sev := r.Labels["severity"]; sev != "warning" && sev != "critical" {
					t.Errorf("%s: severity %q", name, sev)
				}
				// absent() of a comparison has no labels to name: its annotations name the namespace.
				names := strings.Contains(r.Annotations["summary"], "{{ $labels.") ||
					(name == "KubeFIPOperatorMetricsAbsent" && strings.Contains(r.Annotations["summary"], testNamespace))
				if !names || r.Annotations["description"] == "" {
					t.Errorf("%s: annotations %v; want a summary naming the object and a description", name, r.Annotations)
				}
			}
		})
	}
}

// checkKubevipNotInstalledHolds evaluates expr, KubeFIPKubevipNotInstalled's, over what the
// operator's registry serves for three FloatingIPs: it holds for the one whose kube-vip install was
// refused, not for the one installed, and not for the one whose guest does not want the operator's
// kube-vip.
func checkKubevipNotInstalledHolds(t *testing.T, expr string) {
	t.Helper()
	m := metrics.New()
	m.SetFloatingIP("c-m-1", "refused", "guest-1", false, metrics.ServedNo, metrics.KubevipInstalledNo)
	m.SetFloatingIP("c-m-2", "installed", "guest-2", true, metrics.ServedYes, metrics.KubevipInstalledYes)
	m.SetFloatingIP("c-m-3", "not-wanted", "guest-3", true, metrics.ServedIdle, metrics.KubevipNotWanted)
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	held := alerts.Holds(t, expr, text.String())
	if len(held) != 1 || !strings.Contains(held[0], "name:refused") {
		t.Errorf("%q holds for %v; want the refused FloatingIP's series only", expr, held)
	}
}

func usageAlert(t *testing.T, threshold float64, severity string) func(alertRule, query) {
	return func(r alertRule, q query) {
		op, val, ok := q.threshold()
		if !ok || op.String() != ">" || val != threshold || r.Labels["severity"] != severity ||
			!q.reads("kubefipoperator_fipranges_reserved", "kubefipoperator_fipranges_capacity") {
			t.Errorf("%s: %q with severity %q; want reserved/capacity above %v, %s", r.Alert, r.Expr, r.Labels["severity"], threshold, severity)
		}
	}
}

// TestServiceMonitor: the ServiceMonitor selects the metrics Service and scrapes its named port.
func TestServiceMonitor(t *testing.T) {
	objs := renderOperator(t, allSwitchesOn())
	var svc corev1.Service
	convert(t, find(t, objs, "Service", "kube-fip-operator-metrics"), &svc)
	sm := find(t, objs, "ServiceMonitor", "kube-fip-operator")
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range selector {
		if svc.Labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s; the Service has %q", k, v, svc.Labels[k])
		}
	}
	names, _, _ := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames")
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(selector) == 0 || len(names) != 1 || names[0] != testNamespace || len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor spec %v", sm.Object["spec"])
	}
	ep := endpoints[0].(map[string]interface{})
	if ep["port"] != "metrics" || ep["path"] != "/metrics" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" {
		t.Errorf("endpoint %v, Service ports %+v; want the named port metrics", ep, svc.Spec.Ports)
	}
	if sm.GetLabels()["release"] != "rancher-monitoring" {
		t.Errorf("labels %v; want the extra label from values", sm.GetLabels())
	}
}

// grafanaPanel is the part of a Grafana panel the test reads; rows nest panels.
type grafanaPanel struct {
	ID         int                     `json:"id"`
	Title      string                  `json:"title"`
	Type       string                  `json:"type"`
	Datasource interface{}             `json:"datasource"`
	Targets    []struct{ Expr string } `json:"targets"`
	Panels     []grafanaPanel          `json:"panels"`
}

// labelValues finds the metric of a Grafana variable query label_values(metric, label).
var labelValues = regexp.MustCompile(`^label_values\((\w+),\s*\w+\)$`)

// TestDashboard: the dashboard ConfigMap is where Rancher Monitoring's Grafana looks, its JSON is
// valid, every query parses with PromQL and reads only exported metrics, and it shows range usage,
// guest cluster status and guest events.
func TestDashboard(t *testing.T) {
	exported := exportedMetrics(t)
	var cm corev1.ConfigMap
	convert(t, find(t, renderOperator(t, allSwitchesOn()), "ConfigMap", "kube-fip-operator-dashboard"), &cm)
	if cm.Namespace != "cattle-dashboards" || cm.Labels["grafana_dashboard"] != "1" || len(cm.Data) != 1 {
		t.Fatalf("dashboard ConfigMap %s/%s labels %v with %d keys", cm.Namespace, cm.Name, cm.Labels, len(cm.Data))
	}
	var dash struct {
		UID        string         `json:"uid"`
		Title      string         `json:"title"`
		Panels     []grafanaPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string      `json:"name"`
				Query interface{} `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal([]byte(cm.Data["kube-fip-operator.json"]), &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	read := map[string]bool{}
	ids := map[int]bool{}
	var walk func([]grafanaPanel)
	walk = func(panels []grafanaPanel) {
		for _, p := range panels {
			if ids[p.ID] {
				t.Errorf("panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			if p.Type != "row" && (p.Datasource == nil || len(p.Targets) == 0) {
				t.Errorf("panel %q has no datasource or no query", p.Title)
			}
			for _, target := range p.Targets {
				for _, m := range mustParseQuery(t, target.Expr, exported).metrics {
					read[m] = true
				}
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, m := range []string{"kubefipoperator_fipranges_reserved", "kubefipoperator_fipranges_capacity",
		"kubefipoperator_guestcluster_status", "kubefipoperator_guestcluster_events"} {
		if !read[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
	for _, v := range dash.Templating.List {
		q, _ := v.Query.(map[string]interface{})
		if text, _ := q["query"].(string); text != "" {
			m := labelValues.FindStringSubmatch(text)
			if m == nil || !exported[m[1]] {
				t.Errorf("variable %s: query %q does not read an exported metric", v.Name, text)
			}
		}
	}
	if dash.UID == "" || dash.Title == "" {
		t.Errorf("dashboard uid %q, title %q", dash.UID, dash.Title)
	}
}
