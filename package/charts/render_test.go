package charts

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestLint lints both charts with Helm's linter, as helm lint --strict would: with the defaults and,
// for the operator chart, with every switch on. Any warning or error fails.
func TestLint(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chart  string
		values map[string]interface{}
	}{
		{"crd-defaults", CRDChart, nil},
		{"operator-defaults", OperatorChart, nil},
		{"operator-all-switches", OperatorChart, allSwitchesOn()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Lint(chartDir(tc.chart), tc.values, testNamespace, testKubeVersion); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestLintReportsWarnings shows that Lint fails on a lint warning, not only on errors: a chart
// rendering an object with an invalid name.
func TestLintReportsWarnings(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"Chart.yaml":               "apiVersion: v2\nname: warned\nversion: 0.1.0\n",
		"values.yaml":              "{}\n",
		"templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_A_Valid_Name\n",
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	err := Lint(dir, nil, testNamespace, testKubeVersion)
	if err == nil || !strings.Contains(err.Error(), "Not_A_Valid_Name") {
		t.Errorf("Lint = %v; want the invalid name reported", err)
	}
}

func kindsAndNames(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		id := o.GetKind() + " " + o.GetName()
		if ns := o.GetNamespace(); ns != "" {
			id = o.GetKind() + " " + ns + "/" + o.GetName()
		}
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// TestRenderObjects renders the operator chart with the defaults and with every switch on, and
// checks the exact set of objects: the optional ones appear only when switched on, and the secret
// Roles follow the configured namespaces.
func TestRenderObjects(t *testing.T) {
	base := []string{
		"ClusterRole kube-fip-operator",
		"ClusterRoleBinding kube-fip-operator",
		"ConfigMap kube-fip/kube-fip-config",
		"Deployment kube-fip/kube-fip-operator",
		"Role kube-fip/kube-fip-operator",
		"RoleBinding kube-fip/kube-fip-operator",
		"Secret kube-fip/kube-fip-operator-security",
		"Secret kube-fip/kube-fip-operator-webhook-tls",
		"Service kube-fip/kube-fip-operator-metrics",
		"Service kube-fip/kube-fip-operator-webhook",
		"ServiceAccount kube-fip/kube-fip-operator",
		"ValidatingWebhookConfiguration kube-fip-operator",
	}
	secretRoles := func(namespaces ...string) []string {
		var out []string
		for _, ns := range namespaces {
			out = append(out, "Role "+ns+"/kube-fip-operator-secrets", "RoleBinding "+ns+"/kube-fip-operator-secrets")
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		values map[string]interface{}
		want   []string
	}{
		{"defaults", nil, append(append([]string{}, base...), secretRoles("fleet-default", "cattle-global-data")...)},
		{"all-switches", allSwitchesOn(), append(append(append([]string{}, base...), secretRoles("fleet-other", "global-other")...),
			"ConfigMap cattle-dashboards/kube-fip-operator-dashboard",
			"PodDisruptionBudget kube-fip/kube-fip-operator",
			"PrometheusRule kube-fip/kube-fip-operator",
			"ServiceMonitor kube-fip/kube-fip-operator",
		)},
		{"one-secret-namespace", map[string]interface{}{"rancher": map[string]interface{}{"fleetNamespace": "rancher", "globalDataNamespace": "rancher"}},
			append(append([]string{}, base...), secretRoles("rancher")...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := kindsAndNames(renderOperator(t, tc.values))
			sort.Strings(tc.want)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("rendered objects:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestCRDCheck shows the install failing with a message naming the CRD chart when its API is
// missing, or Rancher's when the cluster is not Rancher's, and the two documented ways to render
// offline: --api-versions, or the values switch.
func TestCRDCheck(t *testing.T) {
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Render(c, RenderOptions{Namespace: testNamespace, KubeVersion: testKubeVersion})
	if err == nil || !strings.Contains(err.Error(), "kube-fip-operator-crd chart is not installed") {
		t.Errorf("render without the CRD API: error %v; want the missing CRD chart named", err)
	}
	_, err = Render(c, RenderOptions{Namespace: testNamespace, APIVersions: []string{CRDAPIVersion}, KubeVersion: testKubeVersion})
	if err == nil || !strings.Contains(err.Error(), "Rancher's API provisioning.cattle.io/v1 is not in this cluster") ||
		!strings.Contains(err.Error(), "Rancher's local cluster") {
		t.Errorf("render without Rancher's APIs: error %v; want the missing Rancher API named, with its group", err)
	}
	if _, err := Render(c, RenderOptions{Namespace: testNamespace, APIVersions: InstallAPIVersions(), KubeVersion: testKubeVersion}); err != nil {
		t.Errorf("render with --api-versions %v: %v", InstallAPIVersions(), err)
	}
	off := map[string]interface{}{"validateInstallCRD": false}
	if _, err := Render(c, RenderOptions{Namespace: testNamespace, Values: off, KubeVersion: testKubeVersion}); err != nil {
		t.Errorf("render with validateInstallCRD=false: %v", err)
	}
}

// TestReplicasNeedLeaderElection: more than one replica without leader election is refused, since
// every replica would run the controllers.
func TestReplicasNeedLeaderElection(t *testing.T) {
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]interface{}{"replicas": 2, "leaderElection": false}
	_, err = Render(c, RenderOptions{Values: values, APIVersions: InstallAPIVersions(), KubeVersion: testKubeVersion})
	if err == nil || !strings.Contains(err.Error(), "needs leaderElection=true") {
		t.Errorf("2 replicas without leader election: error %v; want a refusal", err)
	}
	values["replicas"] = 1
	if _, err := Render(c, RenderOptions{Values: values, APIVersions: InstallAPIVersions(), KubeVersion: testKubeVersion}); err != nil {
		t.Errorf("1 replica without leader election: %v", err)
	}
}
