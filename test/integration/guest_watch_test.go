package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// servedWithin is the acceptance bound: with the chart's defaults, the FloatingIP says what
// the guest shows within 30 s of the guest showing it (plus the grace period where kube-vip is
// given one).
const servedWithin = 30 * time.Second

// TestServedFollowsTheGuestAtTheDefaultInterval: with operateGuestClusterInterval at its default
// (480 s), so that no periodic pass comes within the test's deadlines, the FloatingIP's Served
// condition follows the guest within 30 s: kube-vip's DaemonSet getting a ready pod (Idle); a
// Service's status holding the address, as kube-vip writes it once bound (Served); kube-vip
// losing its ready pods (KubevipNotReady, within 30 s plus the grace period); and the Service
// going (Idle). The test plays kube-vip and its DaemonSet controller, writing their status; the
// lags are printed. The operator keeps two watch requests open to the guest (its Services, and
// kube-vip's DaemonSets), as kubefipoperator_guestcluster_watches says.
func TestServedFollowsTheGuestAtTheDefaultInterval(t *testing.T) {
	ctx := context.Background()
	repo := chartrepo.ChartRepoForTest(t, defaultCharts()...)
	f := newFixture(t, "kube-fip-watch")
	proxy := f.shard.StartClusterProxy(t)
	g := f.shard.StartGuest(t, "watched")
	gc := rancherCluster(t, proxy, "watched", "c-m-watch001", nil, g)
	f.extraNamespace(gc.id)
	const addr, fip = "10.192.0.2", "watched-kubevip"
	const grace = 4 * time.Second
	f.operatorConfig(map[string]string{"kubevipGuestInstall": "enabled", "kubevipChartRepoUrl": repo.URL})
	_, port := f.operator("--serve-grace-period=" + grace.String())
	f.createRange("watched", "10.192.0.0/28")
	f.createFIPIn(gc.id, fip, "watched", addr)

	// The first pass installs kube-vip, whose DaemonSet no controller rolls out here.
	f.servedReason(gc, fip, v1.ReasonServePending, 90*time.Second)
	rig.Eventually(t, 30*time.Second, "two watch requests open to the guest", func() bool {
		return metricSum(t, port, "kubefipoperator_guestcluster_watches") == 2
	})
	follows := func(what, reason string, since time.Time, bound time.Duration) *v1.FloatingIP {
		t.Helper()
		x := f.servedReason(gc, fip, reason, bound-time.Since(since))
		t.Logf("%s: Served %s %.1f s after the guest showed it (bound %s)", what, reason, time.Since(since).Seconds(), bound)
		return x
	}

	// Once kube-vip's grace period is over, a pass judges its pods not ready (the periodic pass is
	// 480 s away; the pass comes back when the grace ends).
	f.servedReason(gc, fip, v1.ReasonKubevipNotReady, 30*time.Second)
	since := time.Now()
	gc.setDaemonSetStatus(t, "kube-system", "kube-fip-kube-vip", 1, 1)
	follows("kube-vip's pod ready", v1.ReasonIdle, since, servedWithin)

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "ingress", Namespace: "default", Labels: map[string]string{"implementation": "kube-vip"},
			Annotations: map[string]string{kubevipconfig.LoadBalancerIPsAnnotation: addr}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
	}
	since = time.Now()
	if _, err := gc.direct.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	follows("a Service asking for the address", v1.ReasonNotServed, since, servedWithin+grace)

	got, err := gc.direct.CoreV1().Services("default").Get(ctx, "ingress", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: addr}}
	since = time.Now()
	if _, err := gc.direct.CoreV1().Services("default").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if x := follows("the Service's status holding the address", v1.ReasonServed, since, servedWithin); x.Status.ServedBy != "default/ingress" {
		t.Errorf("servedBy %q; want default/ingress", x.Status.ServedBy)
	}

	since = time.Now()
	gc.setDaemonSetStatus(t, "kube-system", "kube-fip-kube-vip", 1, 0)
	follows("kube-vip losing its ready pod", v1.ReasonKubevipNotReady, since, servedWithin+grace)

	since = time.Now()
	gc.setDaemonSetStatus(t, "kube-system", "kube-fip-kube-vip", 1, 1)
	follows("kube-vip's pod ready again", v1.ReasonServed, since, servedWithin)

	since = time.Now()
	if err := gc.direct.CoreV1().Services("default").Delete(ctx, "ingress", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	follows("the Service gone", v1.ReasonIdle, since, servedWithin)
	t.Logf("the operator's requests of the guest, through the cluster proxy: %v", proxy.Requests())
}
