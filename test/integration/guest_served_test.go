package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// setDaemonSetStatus writes the status of DaemonSet namespace/name as the DaemonSet controller
// would with desired pods scheduled and ready of them ready: these guests have no controller
// manager and no node, so this test plays the part the end-to-end suite sees the real ones play.
func (gc *guestCluster) setDaemonSetStatus(t *testing.T, namespace, name string, desired, ready int32) {
	t.Helper()
	ctx := context.Background()
	rig.Eventually(t, 30*time.Second, "the DaemonSet's status written", func() bool {
		ds, err := gc.direct.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		ds.Status.ObservedGeneration = ds.Generation
		ds.Status.DesiredNumberScheduled, ds.Status.CurrentNumberScheduled = desired, desired
		ds.Status.NumberReady, ds.Status.NumberAvailable, ds.Status.UpdatedNumberScheduled = ready, ready, desired
		ds.Status.NumberUnavailable = desired - ready
		_, err = gc.direct.AppsV1().DaemonSets(namespace).UpdateStatus(ctx, ds, metav1.UpdateOptions{})
		return err == nil
	})
}

// servedReason waits for the FloatingIP's Served condition to have reason, and returns it.
func (f *fixture) servedReason(gc *guestCluster, name, reason string, timeout time.Duration) *v1.FloatingIP {
	f.t.Helper()
	return f.waitFIPIn(gc.id, name, timeout, "Served "+reason, func(x *v1.FloatingIP) bool {
		c, ok := v1.GetCondition(x.Status.Conditions, v1.Served)
		return ok && c.Reason == reason
	})
}

// metricsOf is what the operator on port serves at /metrics.
func metricsOf(t *testing.T, port int) string {
	t.Helper()
	_, body := httpGet(t, "http://127.0.0.1:"+itoa(port)+"/metrics")
	return body
}

// The per-FloatingIP series these tests read.
const (
	servedSeries  = "kubefipoperator_floatingip_served"
	kubevipSeries = "kubefipoperator_floatingip_kubevip_installed"
)

// floatingIPMetric is the value of the operator's per-FloatingIP gauge metric (such as
// kubefipoperator_floatingip_served) for the FloatingIP, as the operator on port serves it; ""
// without a series.
func floatingIPMetric(t *testing.T, port int, metric, namespace, name string) string {
	t.Helper()
	for _, line := range strings.Split(metricsOf(t, port), "\n") {
		if strings.HasPrefix(line, metric+"{") &&
			strings.Contains(line, `namespace="`+namespace+`"`) && strings.Contains(line, `name="`+name+`"`) {
			return line[strings.LastIndex(line, " ")+1:]
		}
	}
	return ""
}

// TestGuestServedStateIsReadBack: what the FloatingIP says of its address is what the guest shows,
// read back on every pass. With the operator's kube-vip installed:
//   - its DaemonSet not yet rolled out: ServePending (Ready False, Reconciling);
//   - scheduling no pod: KubevipNotScheduled (Ready False, Stalled), the served metric 0, and
//     Harvester's kube-vip left serving the guest;
//   - its pods not ready past the grace period: KubevipNotReady;
//   - a ready pod and nothing asking for the address: Idle and Ready, and only now Harvester's
//     kube-vip kept off every node;
//   - a LoadBalancer Service asking for the address and no status holding it past the grace
//     period: NotServed (Ready False);
//   - the Service's status holding it, as kube-vip writes it once bound: Served, naming the
//     Service, Ready, the metric 1;
//
// and when the guest no longer wants the operator's kube-vip, Harvester's is given back its nodes.
func TestGuestServedStateIsReadBack(t *testing.T) {
	ctx := context.Background()
	repo := chartrepo.ChartRepoForTest(t, defaultCharts()...)
	f := newFixture(t, "kube-fip-served")
	proxy := f.shard.StartClusterProxy(t)
	g := f.shard.StartGuest(t, "served")
	if err := g.InstallHarvesterCloudProvider(); err != nil {
		t.Fatal(err)
	}
	gc := rancherCluster(t, proxy, "served", "c-m-served01", nil, g)
	f.extraNamespace(gc.id)
	const addr, fip = "10.191.0.2", "served-kubevip"
	install := map[string]string{"operateGuestClusterInterval": "1", "kubevipGuestInstall": "enabled", "kubevipChartRepoUrl": repo.URL}
	f.operatorConfig(install)
	_, port := f.operator("--serve-grace-period=4s")
	f.createRange("served", "10.191.0.0/28")
	f.createFIPIn(gc.id, fip, "served", addr)

	harvesterSelector := func() map[string]string {
		ds, err := gc.direct.AppsV1().DaemonSets(kubevipconfig.HarvesterDaemonSetNamespace).Get(ctx, kubevipconfig.HarvesterDaemonSetName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ds.Spec.Template.Spec.NodeSelector
	}
	notReady := func(x *v1.FloatingIP, reason string, stalled bool) {
		t.Helper()
		c, _ := v1.GetCondition(x.Status.Conditions, v1.Ready)
		want := v1.Reconciling
		if stalled {
			want = v1.Stalled
		}
		if c.Status != corev1.ConditionFalse || c.Reason != reason || !want.IsTrue(x) {
			t.Errorf("Ready %s/%s, %s %v; want False/%s with %s True", c.Status, c.Reason, want, want.IsTrue(x), reason, want)
		}
	}

	x := f.servedReason(gc, fip, v1.ReasonServePending, 90*time.Second)
	notReady(x, v1.ReasonServePending, false)
	if !v1.KubevipInstalled.IsTrue(x) {
		t.Errorf("KubevipInstalled is not True: %s", message(x.Status.Conditions, v1.KubevipInstalled))
	}

	gc.setDaemonSetStatus(t, "kube-system", "kube-fip-kube-vip", 0, 0)
	x = f.servedReason(gc, fip, v1.ReasonKubevipNotScheduled, 30*time.Second)
	notReady(x, v1.ReasonKubevipNotScheduled, true)
	rig.Eventually(t, 10*time.Second, "the served metric 0", func() bool { return floatingIPMetric(t, port, servedSeries, gc.id, fip) == "0" })
	if sel := harvesterSelector(); len(sel) != 0 {
		t.Errorf("Harvester's kube-vip got node selector %v while the operator's has no pod", sel)
	}

	gc.setDaemonSetStatus(t, "kube-system", "kube-fip-kube-vip", 1, 0)
	x = f.servedReason(gc, fip, v1.ReasonKubevipNotReady, 30*time.Second)
	notReady(x, v1.ReasonKubevipNotReady, true)

	gc.setDaemonSetStatus(t, "kube-system", "kube-fip-kube-vip", 1, 1)
	x = f.servedReason(gc, fip, v1.ReasonIdle, 30*time.Second)
	if !v1.Ready.IsTrue(x) {
		t.Errorf("Ready is not True while nothing asks for the address: %s", message(x.Status.Conditions, v1.Ready))
	}
	rig.Eventually(t, 30*time.Second, "Harvester's kube-vip kept off every node once the operator's is ready", func() bool {
		return harvesterSelector()[kubevipconfig.DisabledNodeSelectorKey] == "true"
	})

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "ingress", Namespace: "default", Labels: map[string]string{"implementation": "kube-vip"},
			Annotations: map[string]string{kubevipconfig.LoadBalancerIPsAnnotation: addr}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
	}
	if _, err := gc.direct.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.servedReason(gc, fip, v1.ReasonServePending, 30*time.Second)
	x = f.servedReason(gc, fip, v1.ReasonNotServed, 30*time.Second)
	notReady(x, v1.ReasonNotServed, true)
	if msg := message(x.Status.Conditions, v1.Served); !strings.Contains(msg, "default/ingress asks for "+addr) {
		t.Errorf("Served says %q; want it to name the Service asking", msg)
	}
	rig.Eventually(t, 10*time.Second, "the served metric 0", func() bool { return floatingIPMetric(t, port, servedSeries, gc.id, fip) == "0" })

	got, err := gc.direct.CoreV1().Services("default").Get(ctx, "ingress", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: addr}}
	if _, err := gc.direct.CoreV1().Services("default").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	x = f.servedReason(gc, fip, v1.ReasonServed, 30*time.Second)
	if !v1.Ready.IsTrue(x) || x.Status.ServedBy != "default/ingress" {
		t.Errorf("Ready %v, servedBy %q; want Ready and default/ingress", v1.Ready.IsTrue(x), x.Status.ServedBy)
	}
	rig.Eventually(t, 10*time.Second, "the served metric 1", func() bool { return floatingIPMetric(t, port, servedSeries, gc.id, fip) == "1" })

	// The guest no longer wants the operator's kube-vip: Harvester's gets its nodes back.
	disabled := map[string]string{}
	for k, v := range install {
		disabled[k] = v
	}
	disabled["kubevipGuestInstall"] = "disabled"
	f.operatorConfig(disabled)
	rig.Eventually(t, 30*time.Second, "Harvester's kube-vip given back its nodes", func() bool {
		_, still := harvesterSelector()[kubevipconfig.DisabledNodeSelectorKey]
		return !still
	})
	rig.Eventually(t, 10*time.Second, "a HarvesterKubevipRestored Event", func() bool {
		return f.shard.HasEvent(t, gc.id, fip, corev1.EventTypeNormal, v1.ReasonHarvesterKubevipRestored, "")
	})
}
