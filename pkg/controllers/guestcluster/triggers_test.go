package guestcluster

import (
	"testing"
	"time"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvesterview"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

// triggerWorld is a controller over w's caches whose queue the test reads.
func triggerWorld(w *world) (*controller, func() []string) {
	c := &controller{
		deps: deps{FloatingIPs: w.fips, Provisioning: w.prov, Management: w.mgmt,
			Metrics: metrics.New()},
		opts:  w.opts,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
	}
	return c, func() []string {
		var out []string
		for c.queue.Len() > 0 {
			item, _ := c.queue.Get()
			out = append(out, item)
			c.queue.Done(item)
		}
		return out
	}
}

// TestFloatingIPTriggers: a FloatingIP that names a guest cluster runs its namespace's pass when it
// appears and when its address changes, not for a status write of the pass's own; one that names
// no cluster runs nothing, unless a pass worked from it before.
func TestFloatingIPTriggers(t *testing.T) {
	w := newWorld()
	c, queued := triggerWorld(w)
	defer c.queue.ShutDown()
	f := w.fip(t)
	f.Status.IPAddress = ""
	plain := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "plain", Annotations: map[string]string{}}}

	steps := []struct {
		what   string
		change func() *v1.FloatingIP
		want   int
	}{
		{"a cluster's FloatingIP appears", func() *v1.FloatingIP { return f }, 1},
		{"it gets its address", func() *v1.FloatingIP { f.Status.IPAddress = testAddr; return f }, 1},
		{"the pass records what it worked from", func() *v1.FloatingIP { f.Status.GuestInputs = c.inputsOf(f); return f }, 0},
		{"another status write", func() *v1.FloatingIP { f.Status.GuestState = v1.GuestStateConfigured; return f }, 0},
		{"updateConfigMap changes", func() *v1.FloatingIP { f.Annotations[v1.AnnotationUpdateConfigMap] = "true"; return f }, 1},
		{"a FloatingIP naming no cluster appears", func() *v1.FloatingIP { return plain }, 0},
		{"it gets its address", func() *v1.FloatingIP { plain.Status.IPAddress = "10.0.0.2"; return plain }, 0},
		{"the cluster's FloatingIP stops naming it", func() *v1.FloatingIP {
			delete(f.Annotations, v1.AnnotationClusterName)
			return f
		}, 1},
		{"a FloatingIP naming a cluster is being deleted", func() *v1.FloatingIP {
			g := f.DeepCopy()
			g.Annotations[v1.AnnotationClusterName], g.Status.GuestInputs = testCluster, ""
			g.DeletionTimestamp = &metav1.Time{}
			return g
		}, 1},
		{"it is gone", func() *v1.FloatingIP { return nil }, 0},
	}
	for _, s := range steps {
		if _, err := c.onFloatingIP(testNS+"/x", s.change()); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if got := queued(); len(got) != s.want || (s.want == 1 && got[0] != testNS) {
			t.Errorf("%s: queued %v, want %d pass(es) of %s", s.what, got, s.want, testNS)
		}
	}
}

// TestRancherTriggers: Rancher's objects start a pass when an input of the last one changed — the
// cluster connects, its labels change, its kubeconfig Secret is rewritten — and not for a status
// heartbeat.
func TestRancherTriggers(t *testing.T) {
	w := newWorld()
	c, queued := triggerWorld(w)
	defer c.queue.ShutDown()
	f := w.fip(t)
	f.Status.GuestInputs = c.inputsOf(f)
	w.fips.Add(f)
	mgmt, err := w.mgmt.Cache().Get(testNS)
	if err != nil {
		t.Fatal(err)
	}
	prov, err := w.prov.Cache().Get(testFleet, testCluster)
	if err != nil {
		t.Fatal(err)
	}

	for _, s := range []struct {
		what string
		do   func()
		want int
	}{
		{"a management cluster heartbeat", func() {
			mgmt.Status.Conditions = append(mgmt.Status.Conditions, mgmtv3.ClusterCondition{Type: "Updated", Status: corev1.ConditionTrue})
			w.mgmt.Add(mgmt)
			_, _ = c.onManagementCluster(testNS, mgmt)
		}, 0},
		{"the cluster disconnects", func() {
			mgmt.Status.Conditions[0].Status = corev1.ConditionFalse
			w.mgmt.Add(mgmt)
			_, _ = c.onManagementCluster(testNS, mgmt)
		}, 1},
		{"a provisioning cluster heartbeat", func() {
			f.Status.GuestInputs = c.inputsOf(f)
			w.fips.Add(f)
			prov.Status.Ready = !prov.Status.Ready
			w.prov.Add(prov)
			_, _ = c.onProvisioningCluster(testFleet+"/"+testCluster, prov)
		}, 0},
		{"the kube-vip label is set", func() {
			prov.Labels = map[string]string{"kube-vip": "true"}
			w.prov.Add(prov)
			_, _ = c.onProvisioningCluster(testFleet+"/"+testCluster, prov)
		}, 1},
	} {
		s.do()
		if got := queued(); len(got) != s.want {
			t.Errorf("%s: queued %v, want %d pass(es)", s.what, got, s.want)
		}
	}
}

// TestMetricsOfRemovedClustersArePruned: once no FloatingIP names a guest cluster, its series go,
// read from the series themselves.
func TestMetricsOfRemovedClustersArePruned(t *testing.T) {
	w := newWorld()
	c, _ := triggerWorld(w)
	defer c.queue.ShutDown()
	c.Metrics.GuestClusterStatus.WithLabelValues(testCluster, "").Set(1)
	c.Metrics.GuestPasses.WithLabelValues("gone", "", string(v1.GuestStateConfigured)).Inc()
	c.Metrics.GuestClusterEvents.WithLabelValues("gone-too", "", "api_connection", "success").Inc()
	c.pruneMetrics()
	if got := c.Metrics.GuestClusters(); len(got) != 1 || got[0] != testCluster {
		t.Errorf("series left for %v; want only %s, which a FloatingIP still names", got, testCluster)
	}
}

// TestTriggersWhileAPassWrites: once a pass started from a FloatingIP's inputs, the handlers that
// run before its status write reaches the cache (the same object handled again, its cluster woken)
// queue no second pass; a change of the inputs meanwhile does. When the status shows the inputs,
// the controller holds nothing more for the FloatingIP.
func TestTriggersWhileAPassWrites(t *testing.T) {
	w := newWorld()
	c, queued := triggerWorld(w)
	defer c.queue.ShutDown()
	f := w.fip(t)
	f.Status.GuestInputs = ""
	key := testNS + "/" + f.Name

	c.started.start(f, c.inputsOf(f))
	if _, err := c.onFloatingIP(key, f); err != nil {
		t.Fatal(err)
	}
	c.enqueueIfChanged(testNS)
	if got := queued(); len(got) != 0 {
		t.Errorf("handlers before the pass's status write queued %v, want nothing", got)
	}

	g := f.DeepCopy()
	g.Annotations[v1.AnnotationUpdateConfigMap] = "false"
	if _, err := c.onFloatingIP(key, g); err != nil {
		t.Fatal(err)
	}
	if got := queued(); len(got) != 1 {
		t.Errorf("an input changed while the pass wrote: queued %v, want a pass of %s", got, testNS)
	}

	// The pass queued for the new inputs wrote them.
	g.Status.GuestInputs = c.inputsOf(g)
	if c.inputsOf(g) != c.started.last(g) {
		t.Error("the status shows the started inputs, yet they count as changed")
	}
	if len(c.started.byName) != 0 {
		t.Errorf("still held once the status shows the inputs: %v", c.started.byName)
	}

	c.started.start(f, "earlier")
	if _, err := c.onFloatingIP(key, nil); err != nil {
		t.Fatal(err)
	}
	if len(c.started.byName) != 0 {
		t.Errorf("still held after the FloatingIP is gone: %v", c.started.byName)
	}
}

// TestOneChangeAnnouncedTwiceRunsOnePass: the FloatingIP handlers see one change twice when both
// the informer and another controller announce it (a range's creation wakes the FloatingIPs that
// waited for it). The second look starts no second pass, whether the first pass still waits in the
// queue or a worker has just taken it and not yet begun.
func TestOneChangeAnnouncedTwiceRunsOnePass(t *testing.T) {
	w := newWorld()
	c, queued := triggerWorld(w)
	defer c.queue.ShutDown()
	f := w.fip(t)
	key := testNS + "/" + f.Name
	f.Status.GuestInputs = "an earlier pass"

	if _, err := c.onFloatingIP(key, f); err != nil {
		t.Fatal(err)
	}
	if _, err := c.onFloatingIP(key, f); err != nil {
		t.Fatal(err)
	}
	if got := queued(); len(got) != 1 {
		t.Errorf("queued %v while waiting in the queue, want one pass", got)
	}

	h := f.DeepCopy()
	h.Status.IPAddress = "192.0.2.99"
	if _, err := c.onFloatingIP(key, h); err != nil {
		t.Fatal(err)
	}
	item, _ := c.queue.Get() // a worker takes it and has not begun
	if _, err := c.onFloatingIP(key, h); err != nil {
		t.Fatal(err)
	}
	c.queue.Done(item)
	if got := queued(); len(got) != 0 {
		t.Errorf("queued %v again after a worker took the pass, want nothing", got)
	}
}

// TestNoPassWhileHarvesterIsRead: a FloatingIP of a range of a Harvester cluster whose first read
// has not ended starts no pass, which would only wait for the NIC; the read's end starts it
// (harvesterChanged). Without Harvester reads, the same FloatingIP starts its pass.
func TestNoPassWhileHarvesterIsRead(t *testing.T) {
	w := newWorld()
	c, queued := triggerWorld(w)
	defer c.queue.ShutDown()
	c.Ranges = fakes.NewRanges(&v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "r", Annotations: map[string]string{
		v1.AnnotationHarvesterClusterName: "hv", v1.AnnotationHarvesterNetworkName: "default/vlan10"}}}).Cache()
	f := w.fip(t)
	for _, s := range []struct {
		what       string
		harvesters *harvesterview.Views
		want       int
	}{
		{"the Harvester cluster's first read under way", harvesterview.New(&harvesterview.Reader{}, time.Minute, nil,
			func(string) bool { return true }, func(string) {}), 0},
		{"no Harvester cluster read", nil, 1},
	} {
		c.Harvesters = s.harvesters
		if _, err := c.onFloatingIP(testNS+"/"+f.Name, f); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if got := queued(); len(got) != s.want {
			t.Errorf("%s: queued %v, want %d pass(es)", s.what, got, s.want)
		}
	}
}
