package integration

import (
	"strings"
	"testing"
	"time"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/alerts"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// TestOriginalOperatorsKubevipIsJudged: a guest whose kube-vip the original kube-fip-operator
// installed (release kube-system/kube-vip of the kube-vip chart, its objects under the chart's own
// name, kube-vip, as upstream kube-vip/helm-charts' kube-vip.name helper names them without a
// nameOverride; the stand-in mirrors kube-vip 0.9.9, as test/rig/chartrepo/charts/README.md records) and that the operator, with kubevipUpdate off, leaves at that release, is judged
// by that DaemonSet: with a ready pod and nothing asking for the address it is Idle and Ready, and
// kubefipoperator_floatingip_served is 2, idle, so that the chart's KubeFIPFloatingIPNotServed
// does not hold for it, where before it was KubevipMissing and 0; with no pod ready past the grace period it is KubevipNotReady,
// naming that DaemonSet.
func TestOriginalOperatorsKubevipIsJudged(t *testing.T) {
	repo := chartrepo.ChartRepoForTest(t, defaultCharts()...)
	f := newFixture(t, "kube-fip-original")
	proxy := f.shard.StartClusterProxy(t)
	g := f.shard.StartGuest(t, "original")
	if err := g.InstallRelease("kube-vip", chartrepo.KubevipChart("0.1.0"), nil); err != nil {
		t.Fatal(err)
	}
	gc := rancherCluster(t, proxy, "original", "c-m-original1", nil, g)
	f.extraNamespace(gc.id)
	const addr, fip = "10.192.0.2", "original-kubevip"
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "1", "kubevipGuestInstall": "enabled", "kubevipUpdate": "false",
		"kubevipChartRepoUrl": repo.URL})
	_, port := f.operator("--serve-grace-period=4s")
	f.createRange("original", "10.192.0.0/28")
	f.createFIPIn(gc.id, fip, "original", addr)

	gc.setDaemonSetStatus(t, "kube-system", "kube-vip", 1, 1)
	x := f.servedReason(gc, fip, v1.ReasonIdle, 90*time.Second)
	if !v1.Ready.IsTrue(x) || !strings.Contains(message(x.Status.Conditions, v1.Served), "kube-vip kube-system/kube-vip has 1 of 1 pods ready") {
		t.Errorf("Ready %v, Served %q; want Ready, judged by kube-system/kube-vip", v1.Ready.IsTrue(x), message(x.Status.Conditions, v1.Served))
	}
	rig.Eventually(t, 10*time.Second, "the served metric 2 (idle)", func() bool {
		return floatingIPMetric(t, port, "kubefipoperator_floatingip_served", gc.id, fip) == "2"
	})
	expr := chartrepo.OperatorAlertExpr(t, f.ns, "KubeFIPFloatingIPNotServed")
	if held := alerts.Holds(t, expr, metricsOf(t, port)); len(held) != 0 {
		t.Errorf("%s holds for %v", expr, held)
	}

	gc.setDaemonSetStatus(t, "kube-system", "kube-vip", 1, 0)
	x = f.servedReason(gc, fip, v1.ReasonKubevipNotReady, 30*time.Second)
	if msg := message(x.Status.Conditions, v1.Served); !strings.Contains(msg, "kube-system/kube-vip") {
		t.Errorf("Served says %q; want it to name kube-system/kube-vip", msg)
	}
}
