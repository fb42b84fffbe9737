package guestapi

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/guestwatch"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	testrig "github.com/kubefip/kube-fip-operator/test/rig"
)

// queued records the passes a Set queues.
type queued struct {
	mu    sync.Mutex
	times []time.Time
}

func (q *queued) add(string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.times = append(q.times, time.Now())
}

func (q *queued) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.times)
}

// watchTarget is the rig's guest as a pass reaches it with token, the operator's kube-vip in
// kube-system.
func (r *rig) watchTarget(t *testing.T, token string) guestwatch.Target {
	t.Helper()
	kc, err := r.proxy.Kubeconfig("c-m-guest001", token)
	if err != nil {
		t.Fatal(err)
	}
	return guestwatch.Target{Key: "c-m-guest001",
		Guest:   guest.Target{Name: "guest001", ClusterID: "c-m-guest001", Kubeconfig: kc, Rancher: []string{r.proxy.URL}},
		Kubevip: &kubevipconfig.KubevipRef{Namespace: "kube-system", Name: "kube-fip-kube-vip", Release: "kube-vip"}}
}

// kubevipDaemonSet is the operator's kube-vip DaemonSet as its chart names it, without pods.
func kubevipDaemonSet() *appsv1.DaemonSet {
	labels := map[string]string{"app.kubernetes.io/name": "kube-vip"}
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-fip-kube-vip", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-vip", Image: "kube-vip"}}}}}}
}

// TestWatchKeepsWhatServes: a guest's watch, through the test cluster proxy to a real API server,
// lists once and then follows the guest: a pass judges from its state with no request; a change of
// a Service naming one of the pass's addresses, or of kube-vip's DaemonSet's counts, queues a pass,
// a burst of them at most one every Debounce, and a change of a Service naming none queues none; a
// watch request that ends is resumed from where it was, not listed again; one whose
// resourceVersion the guest compacted away (410) is followed by a list, which queues a pass; a
// refused token (401) stops the watch until a pass brings a kubeconfig, and the rotated one starts
// it anew; the open watch requests are counted.
func TestWatchKeepsWhatServes(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := prometheus.NewGauge(prometheus.GaugeOpts{Name: "open"})
	var q queued
	const debounce = time.Second
	set := guestwatch.New(ctx, guestwatch.Options{Changed: q.add, Open: open, Timeout: 5 * time.Second,
		Debounce: debounce, WatchTimeout: 4 * time.Second, Backoff: 200 * time.Millisecond, MaxBackoff: time.Second})
	ours, other := netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("10.9.9.9")
	addrs := []netip.Addr{ours}
	target := r.watchTarget(t, "token-1")
	serving := func() kubevipconfig.Serving {
		t.Helper()
		s, err := set.Serving(ctx, target, addrs, addrs)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	s := serving()
	if s.Kubevip == nil || s.Kubevip.Found || len(s.Services) != 0 {
		t.Fatalf("first look: %+v; want kube-vip not found and no Service", s)
	}
	testrig.Eventually(t, 10*time.Second, "two watch requests open", func() bool { return testutil.ToFloat64(open) == 2 })

	// kube-vip's DaemonSet appears and gets a ready pod: each queues a pass.
	if _, err := r.direct.AppsV1().DaemonSets("kube-system").Create(ctx, kubevipDaemonSet(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testrig.Eventually(t, 10*time.Second, "a pass queued for kube-vip's DaemonSet", func() bool { return q.count() >= 1 })
	ds, err := r.direct.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-fip-kube-vip", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, NumberReady: 1}
	if _, err := r.direct.AppsV1().DaemonSets("kube-system").UpdateStatus(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testrig.Eventually(t, 10*time.Second, "kube-vip ready in the watch's state", func() bool {
		k := serving().Kubevip
		return k.Found && k.Ready == 1
	})
	// The second change came within Debounce of the first: its pass is queued when that is over.
	testrig.Eventually(t, 10*time.Second, "a pass queued for kube-vip's ready pod", func() bool { return q.count() >= 2 })
	time.Sleep(2 * debounce)
	passes := q.count()
	if passes != 2 {
		t.Errorf("%d passes queued by kube-vip's DaemonSet appearing and becoming ready; want 2", passes)
	}

	// A Service naming none of the pass's addresses queues nothing, however often it changes.
	svc := func(name string, asks netip.Addr) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"implementation": "kube-vip"},
			Annotations: map[string]string{kubevipconfig.LoadBalancerIPsAnnotation: asks.String()}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	}
	setStatus := func(name string, holds netip.Addr) {
		t.Helper()
		got, err := r.direct.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: holds.String()}}
		if _, err := r.direct.CoreV1().Services("default").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.direct.CoreV1().Services("default").Create(ctx, svc("theirs", other), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setStatus("theirs", other)
	time.Sleep(3 * debounce)
	if n := q.count(); n != passes {
		t.Errorf("a Service naming none of the addresses queued %d passes; want none", n-passes)
	}

	// A Service asking for ours queues a pass, and the pass reads it from the state: no request.
	if _, err := r.direct.CoreV1().Services("default").Create(ctx, svc("ingress", ours), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testrig.Eventually(t, 10*time.Second, "a pass queued for the Service asking", func() bool { return q.count() > passes })
	r.proxy.ResetRequests()
	s = serving()
	if len(s.Services) != 1 || s.Services[0].String() != "default/ingress" || len(s.Services[0].Asks) != 1 {
		t.Fatalf("after the Service asking: %+v; want default/ingress asking for %s", s.Services, ours)
	}
	if got := r.proxy.Requests(); len(got) != 0 {
		t.Errorf("a pass's look made the requests %v; want none", got)
	}

	// A burst of changes queues at most one pass at once and one after Debounce.
	before := q.count()
	start := time.Now()
	for i := range 10 {
		setStatus("ingress", netip.AddrFrom4([4]byte{10, 0, 0, byte(100 + i)}))
	}
	setStatus("ingress", ours)
	time.Sleep(3 * debounce)
	burst := q.count() - before
	t.Logf("a burst of 11 changes in %s queued %d passes", time.Since(start).Round(time.Millisecond), burst)
	if burst < 1 || burst > 1+int(time.Since(start)/debounce) {
		t.Errorf("a burst of 11 changes in %s queued %d passes; want one, and at most one more every %s", time.Since(start), burst, debounce)
	}
	if s := serving(); len(s.Services) != 1 || len(s.Services[0].Holds) != 1 {
		t.Errorf("after the burst: %+v; want default/ingress holding %s", s.Services, ours)
	}

	// The watch requests end every few seconds and are resumed, not listed again.
	r.proxy.ResetRequests()
	time.Sleep(10 * time.Second)
	got := r.proxy.Requests()
	t.Logf("in 10 s of watch requests of at most 4 s: %v", got)
	if got["WATCH services"] < 2 || got["GET services"] != 0 || got["GET daemonsets"] != 0 {
		t.Errorf("requests %v; want the watches resumed (WATCH services at least twice) and nothing listed", got)
	}

	// The guest compacts away the resourceVersion the watch resumes from: it lists again, and
	// queues a pass.
	before = q.count()
	for i := range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("churn-%d", i), Namespace: "default"}}
		if _, err := r.direct.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := env.CompactEtcd(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.proxy.ResetRequests()
	testrig.Eventually(t, 20*time.Second, "the Services listed again after etcd's compaction at "+fmt.Sprint(rev), func() bool {
		return r.proxy.Requests()["GET services"] >= 1
	})
	testrig.Eventually(t, 10*time.Second, "a pass queued by the list", func() bool { return q.count() > before })
	if s := serving(); len(s.Services) != 1 || len(s.Services[0].Holds) != 1 {
		t.Errorf("after the list: %+v; want default/ingress holding %s", s.Services, ours)
	}

	// Rancher refuses the token: the watch stops at its next request; the pass with the old
	// kubeconfig is refused too, and the rotated kubeconfig starts the watch anew.
	// A watch learns of the refusal at its next request, at most one request's time later; until
	// then a pass reads its state. No watch request open is no sign of it: both may be between
	// two requests.
	r.proxy.SetToken("c-m-guest001", "token-2")
	testrig.Eventually(t, 20*time.Second, "a pass with the refused token refused", func() bool {
		_, err := set.Serving(ctx, target, addrs, addrs)
		return err != nil
	})
	testrig.Eventually(t, 20*time.Second, "no watch request open once the token is refused", func() bool { return testutil.ToFloat64(open) == 0 })
	target = r.watchTarget(t, "token-2")
	if s := serving(); len(s.Services) != 1 || !s.Kubevip.Found {
		t.Errorf("with the rotated token: %+v; want default/ingress and kube-vip found", s)
	}
	testrig.Eventually(t, 10*time.Second, "two watch requests open with the rotated token", func() bool { return testutil.ToFloat64(open) == 2 })

	set.Stop("c-m-guest001")
	testrig.Eventually(t, 10*time.Second, "no watch request open once stopped", func() bool { return testutil.ToFloat64(open) == 0 })
	if got := set.Running(); len(got) != 0 {
		t.Errorf("watches running after Stop: %v", got)
	}
}
