package chartrepo

import (
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubefip/kube-fip-operator/package/charts"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/alerts"
)

// RepoChart loads the chart name from the repository's charts/ directory, the product's own.
func RepoChart(t testing.TB, name string) *chart.Chart {
	t.Helper()
	root, err := rig.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	c, err := charts.Load(filepath.Join(root, "charts", name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// RenderOperatorChart renders the operator chart for release namespace ns as `helm template`
// does, with values and the extra API versions the cluster would offer.
func RenderOperatorChart(t testing.TB, ns string, values map[string]interface{}, apiVersions ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := charts.Render(RepoChart(t, charts.OperatorChart), charts.RenderOptions{Namespace: ns, Values: values,
		APIVersions: append(charts.InstallAPIVersions(), apiVersions...), KubeVersion: charts.MinKubeVersion})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// OperatorAlertExpr is the expression of alert in the PrometheusRule the operator chart renders for
// release namespace ns with its alerts on.
func OperatorAlertExpr(t testing.TB, ns, alert string) string {
	t.Helper()
	objs := RenderOperatorChart(t, ns, map[string]interface{}{
		"monitoring": map[string]interface{}{"prometheusRule": map[string]interface{}{"enabled": true}},
	}, "monitoring.coreos.com/v1/PrometheusRule")
	return alerts.Expr(t, objs, alert)
}
