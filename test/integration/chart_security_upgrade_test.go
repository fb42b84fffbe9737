package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kubefip/kube-fip-operator/package/charts"
	"github.com/kubefip/kube-fip-operator/pkg/admission"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// TestChartUpgradeWidensSecurityAndUsesIt: one upgrade of the operator chart with the Helm SDK may
// widen security.* and, in the same step, use the wider setting in config.*. The chart is
// installed allowing chart source A, with kube-fip-config naming A; the operator runs with the
// installed Deployment's own arguments and serves the chart's webhook, which refuses
// kube-fip-config naming source B. Then a single upgrade allows A and B and names B: it succeeds
// while that operator, started with the old settings, still judges kube-fip-config (Helm writes
// the security settings' Secret before the ConfigMap, and the webhook reads them at every write),
// and kube-fip-config holds B. A later edit naming source C, which neither allows, is refused.
func TestChartUpgradeWidensSecurityAndUsesIt(t *testing.T) {
	shards.Take(t)
	ctx := context.Background()
	guest := startChartGuest(t, "security-upgrade")
	kube := kubernetes.NewForConfigOrDie(guest.Config)
	helm := newHelmCluster(t, guest.Config)
	if err := helm.install(charts.CRDChart, nil); err != nil {
		t.Fatalf("installing the CRD chart: %v", err)
	}
	rig.Eventually(t, time.Minute, "the kubefip API to be served", func() bool {
		list, err := kube.Discovery().ServerResourcesForGroupVersion("kubefip.k8s.binbash.org/v1")
		return err == nil && len(list.APIResources) >= 2
	})
	const a, b, c = "https://charts-a.example.com/kube-vip", "https://charts-b.example.com/kube-vip", "https://charts-c.example.com/kube-vip"
	values := func(sources, repo string) map[string]interface{} {
		return map[string]interface{}{
			"security": map[string]interface{}{"allowedChartSources": sources},
			"config":   map[string]interface{}{config.KeyKubevipChartRepoURL: repo},
		}
	}
	if err := helm.install(charts.OperatorChart, values(a, a)); err != nil {
		t.Fatalf("installing the operator chart allowing and naming %s: %v", a, err)
	}

	// The operator as the installed Deployment runs it, serving the chart's webhook, which the API
	// server reaches at a loopback port.
	d, err := kube.AppsV1().Deployments(chartNamespace).Get(ctx, "kube-fip-operator", metav1.GetOptions{})
	rig.Must(t, err)
	var args []string
	for _, arg := range d.Spec.Template.Spec.Containers[0].Args {
		args = append(args, strings.ReplaceAll(arg, "$(NAMESPACE)", chartNamespace))
	}
	port := rig.FreePort(t)
	suite.PointWebhookAt(t, kube, "kube-fip-operator", port)
	args = append(args, "--kubeconfig", helm.kubeconfig, "--metrics-bind-address", "127.0.0.1", "--metrics-port", fmt.Sprint(rig.FreePort(t)),
		"--webhook-port", fmt.Sprint(port), "--webhook-hosts", "127.0.0.1")
	p, err := controlplane.StartOperator(shards.Of(t).Operator, nil, nil, args...)
	rig.Must(t, err)
	t.Cleanup(func() {
		_ = p.Stop(20 * time.Second)
		if t.Failed() {
			fmt.Fprintf(os.Stderr, "---- operator output (%s) ----\n%s\n", t.Name(), rig.LastLines(p.Logs(), 80))
		}
	})
	rig.Must(t, p.WaitForLog(ctx, "controllers running", time.Minute))
	probe := &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "webhook-probe"}, Spec: v1.FloatingIPRangeSpec{IPRange: "198.18.255.0/30"}}
	rig.Eventually(t, 30*time.Second, "the API server to reach the chart's webhook", func() bool {
		return suite.DryRunCreateRangeIn(guest.Config, probe) == nil
	})

	cms := kube.CoreV1().ConfigMaps(chartNamespace)
	edit := func(repo string) error {
		cm, err := cms.Get(ctx, config.ConfigMapName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data[config.KeyKubevipChartRepoURL] = repo
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	}
	if err := edit(b); !suite.RefusedBecause(err, config.KeyKubevipChartRepoURL) {
		t.Fatalf("kube-fip-config naming %s before the upgrade: %v; want refused by the webhook", b, err)
	}

	upgrade := action.NewUpgrade(helm.action())
	upgrade.Namespace, upgrade.Timeout = chartNamespace, time.Minute
	upgrade.PostRenderer = loopbackWebhook{url: fmt.Sprintf("https://127.0.0.1:%d%s", port, admission.Path)}
	rel, err := upgrade.Run(charts.OperatorChart, chartrepo.RepoChart(t, charts.OperatorChart), values(a+","+b, b))
	if err != nil {
		t.Fatalf("one upgrade allowing %s and naming it: %v; want it accepted", b, err)
	}
	if rel.Info.Status != release.StatusDeployed {
		t.Errorf("release after the upgrade: %s; want %s", rel.Info.Status, release.StatusDeployed)
	}
	cm, err := cms.Get(ctx, config.ConfigMapName, metav1.GetOptions{})
	rig.Must(t, err)
	if got := cm.Data[config.KeyKubevipChartRepoURL]; got != b {
		t.Errorf("kube-fip-config %s after the upgrade: %q; want %q", config.KeyKubevipChartRepoURL, got, b)
	}

	err = edit(c)
	if !suite.RefusedBecause(err, config.KeyKubevipChartRepoURL, "nothing was changed") {
		t.Errorf("kube-fip-config naming %s, which the deployment does not allow: %v; want refused by the webhook", c, err)
	}
	t.Logf("refused after the upgrade: %v", err)
	var unchanged *corev1.ConfigMap
	unchanged, err = cms.Get(ctx, config.ConfigMapName, metav1.GetOptions{})
	if rig.Must(t, err); unchanged.Data[config.KeyKubevipChartRepoURL] != b {
		t.Errorf("kube-fip-config %s: %q after a refused edit; want %q", config.KeyKubevipChartRepoURL, unchanged.Data[config.KeyKubevipChartRepoURL], b)
	}
}

// loopbackWebhook is the Helm post-renderer that makes the chart's webhooks call the operator at
// url, the change suite.PointWebhookAt makes to the installed configuration (this API server has
// no kube-proxy to reach the chart's Service), so that an upgrade keeps it.
type loopbackWebhook struct{ url string }

func (l loopbackWebhook) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	docs := strings.Split(in.String(), "\n---")
	for i, doc := range docs {
		var o map[string]interface{}
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil || o["kind"] != "ValidatingWebhookConfiguration" {
			continue
		}
		hooks, _ := o["webhooks"].([]interface{})
		for _, h := range hooks {
			if hook, ok := h.(map[string]interface{}); ok {
				hook["clientConfig"] = map[string]interface{}{"url": l.url}
			}
		}
		out, err := yaml.Marshal(o)
		if err != nil {
			return nil, err
		}
		docs[i] = "\n" + string(out)
	}
	return bytes.NewBufferString(strings.Join(docs, "\n---")), nil
}
