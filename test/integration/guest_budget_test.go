package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rancher/wrangler/v2/pkg/condition"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
)

// What one guest may make the operator hold and run, as docs/design.md states it ("A guest's
// answers and a pass are bounded"): the tests below hold the operator to it.
const (
	guestMemoryBudget = 64 << 20
	// guestGoroutineBudget bounds the goroutines the operator runs above its idle count while
	// two guests are served: a guest pass and Helm's install run a few dozen.
	guestGoroutineBudget = 200
)

// Discovery flood of the test below: 2,000 API groups of 25 versions each, 50,000 group versions.
const floodGroups, floodVersions = 2000, 25

// operatorFigures samples a running operator's resident memory and goroutines until stopped.
type operatorFigures struct {
	p    *controlplane.Process
	port int

	mu            sync.Mutex
	rss, routines int64
	stop          chan struct{}
	done          chan struct{}
}

func sampleOperator(p *controlplane.Process, port int) *operatorFigures {
	o := &operatorFigures{p: p, port: port, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(o.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			rss, _ := p.Status("VmRSS")
			routines := goroutinesOf(port)
			o.mu.Lock()
			o.rss, o.routines = max(o.rss, rss), max(o.routines, routines)
			o.mu.Unlock()
			select {
			case <-o.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return o
}

// peaks stops the sampling and gives the highest resident memory and goroutine count seen.
func (o *operatorFigures) peaks() (rss, routines int64) {
	close(o.stop)
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.rss, o.routines
}

// goroutinesOf is go_goroutines of the operator serving metrics on port; 0 when it does not answer.
func goroutinesOf(port int) int64 {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int64(n)
		}
	}
	return 0
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// TestGuestHostileDiscoveryFloodCostsABoundedBudget (class 8): guest A's API server lists 50,000
// group versions in its API discovery, as an owner who registered that many aggregated APIs would
// make it. The operator never asks for any guest's discovery or OpenAPI documents (counted at the
// cluster proxy), configures A and, meanwhile, guest B as usual, and serving both costs it at
// most the documented budget above its idle figures: resident memory and goroutines, sampled
// every 100 ms.
func TestGuestHostileDiscoveryFloodCostsABoundedBudget(t *testing.T) {
	repo := chartrepo.ChartRepoForTest(t, defaultCharts()...)
	f := newFixture(t, "kube-fip-hflood")
	proxy := f.shard.StartClusterProxy(t)
	a := rancherCluster(t, proxy, "hflood-a", "c-m-hflooda1", nil, f.shard.StartGuest(t, "hflood-a"))
	b := rancherCluster(t, proxy, "hflood-b", "c-m-hfloodb1", nil, f.shard.StartGuest(t, "hflood-b"))
	f.extraNamespace(a.id)
	f.extraNamespace(b.id)
	rig.Must(t, proxy.SetDiscoveryFlood(a.id, floodGroups, floodVersions))

	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled", "kubevipChartRepoUrl": repo.URL})
	p, port := f.operator()
	f.createRange("hflood", "10.215.0.0/28")
	// Idle: caches synced, the range ready, no guest served yet.
	f.waitRange("hflood", 30*time.Second, "Ready", func(r *v1.FloatingIPRange) bool { return v1.Ready.IsTrue(r) })
	time.Sleep(2 * time.Second)
	idleRSS, err := p.Status("VmRSS")
	if err != nil {
		t.Fatal(err)
	}
	idleRoutines := goroutinesOf(port)

	figures := sampleOperator(p, port)
	start := time.Now()
	f.createFIPIn(a.id, "hflood-a-kubevip", "hflood", "10.215.0.2")
	time.Sleep(time.Second)
	f.createFIPIn(b.id, "hflood-b-kubevip", "hflood", "10.215.0.3")

	b.waitCIDR(t, "10.215.0.3/32", 90*time.Second)
	f.waitFIPIn(b.id, "hflood-b-kubevip", 60*time.Second, "guest B KubevipInstalled=True", func(x *v1.FloatingIP) bool { return v1.KubevipInstalled.IsTrue(x) })
	servedB := time.Since(start)
	x := f.kubevipDecided(a, "hflood-a-kubevip")
	servedA := time.Since(start)
	// B goes on being served, whatever A's passes are doing.
	waitGuestPasses(t, port, b)
	peakRSS, peakRoutines := figures.peaks()
	peakHWM, _ := p.PeakRSS()

	t.Logf("idle: RSS %.1f MiB, %d goroutines; serving A (%d group versions in discovery) and B: peak RSS %.1f MiB (+%.1f), peak %d goroutines (+%d); VmHWM %.1f MiB; B installed %s, A decided %s after A's FloatingIP",
		mib(idleRSS), idleRoutines, floodGroups*floodVersions, mib(peakRSS), mib(peakRSS-idleRSS), peakRoutines, peakRoutines-idleRoutines,
		mib(peakHWM), servedB.Round(100*time.Millisecond), servedA.Round(100*time.Millisecond))
	t.Logf("discovery or OpenAPI requests at the proxy: guest A %d, guest B %d", proxy.DiscoveryRequests(a.id), proxy.DiscoveryRequests(b.id))

	for _, gc := range []*guestCluster{a, b} {
		if n := proxy.DiscoveryRequests(gc.id); n != 0 {
			t.Errorf("guest %s was asked %d times for its API discovery or OpenAPI documents; want never", gc.name, n)
		}
	}
	if !v1.KubevipInstalled.IsTrue(x) {
		c, _ := v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled)
		t.Errorf("guest A: KubevipInstalled %s %s %q; want kube-vip installed whatever its discovery lists", c.Status, c.Reason, c.Message)
	}
	if !v1.GuestConfigured.IsTrue(f.getFIPIn(b.id, "hflood-b-kubevip")) {
		t.Error("guest B is not Configured")
	}
	if grew := peakRSS - idleRSS; grew > guestMemoryBudget {
		t.Errorf("serving the two guests took the operator from %.1f MiB to %.1f MiB resident: %.1f MiB more, over the %d MiB budget",
			mib(idleRSS), mib(peakRSS), mib(grew), guestMemoryBudget>>20)
	}
	if grew := peakRoutines - idleRoutines; grew > guestGoroutineBudget {
		t.Errorf("serving the two guests took the operator from %d to %d goroutines: %d more, over the budget of %d", idleRoutines, peakRoutines, grew, guestGoroutineBudget)
	}
	select {
	case <-p.Done():
		t.Fatalf("the operator exited; its output ends:\n%s", rig.LastLines(p.Logs(), 40))
	default:
	}
}

// servedBudgetWorld is an operator serving two guests, A (the attacked one) and B, with nothing
// installed: the served state is read back from each whatever installs it.
type servedBudgetWorld struct {
	f     *fixture
	proxy *guests.ClusterProxy
	a, b  *guestCluster
	cidr  string
}

func newServedBudgetWorld(t *testing.T, name, cidr string) *servedBudgetWorld {
	f := newFixture(t, "kube-fip-"+name)
	w := &servedBudgetWorld{f: f, proxy: f.shard.StartClusterProxy(t), cidr: cidr}
	w.a = rancherCluster(t, w.proxy, name+"-a", "c-m-"+name+"a", nil, f.shard.StartGuest(t, name+"-a"))
	w.b = rancherCluster(t, w.proxy, name+"-b", "c-m-"+name+"b", nil, f.shard.StartGuest(t, name+"-b"))
	w.f.extraNamespace(w.a.id)
	w.f.extraNamespace(w.b.id)
	return w
}

// serve starts the operator, then gives A and then B a FloatingIP, and returns the operator's
// peak resident memory above idle until B is configured and both have had two more passes, and
// A's FloatingIP then.
func (w *servedBudgetWorld) serve(t *testing.T, name string) (grew int64, a *v1.FloatingIP) {
	w.f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2"})
	p, port := w.f.operator()
	w.f.createRange(name, w.cidr+"0/28")
	w.f.waitRange(name, 30*time.Second, "Ready", func(r *v1.FloatingIPRange) bool { return v1.Ready.IsTrue(r) })
	time.Sleep(2 * time.Second)
	idle, err := p.Status("VmRSS")
	if err != nil {
		t.Fatal(err)
	}
	figures := sampleOperator(p, port)
	start := time.Now()
	w.f.createFIPIn(w.a.id, w.a.name+"-kubevip", name, w.cidr+"2")
	w.f.createFIPIn(w.b.id, w.b.name+"-kubevip", name, w.cidr+"3")
	w.b.waitCIDR(t, w.cidr+"3/32", 90*time.Second)
	w.f.waitFIPIn(w.b.id, w.b.name+"-kubevip", 60*time.Second, "guest B Configured", func(x *v1.FloatingIP) bool { return v1.GuestConfigured.IsTrue(x) })
	took := time.Since(start)
	a = w.f.waitFIPIn(w.a.id, w.a.name+"-kubevip", 60*time.Second, "guest A's served state decided", func(x *v1.FloatingIP) bool {
		c, ok := v1.GetCondition(x.Status.Conditions, v1.Served)
		return ok && c.Reason != ""
	})
	waitGuestPasses(t, port, w.a, w.b)
	peak, _ := figures.peaks()
	t.Logf("idle RSS %.1f MiB; peak %.1f MiB (+%.1f) while A and B were served; B configured after %s; A: Served %s",
		mib(idle), mib(peak), mib(peak-idle), took.Round(100*time.Millisecond), conditionText(a, v1.Served))
	select {
	case <-p.Done():
		t.Fatalf("the operator exited; its output ends:\n%s", rig.LastLines(p.Logs(), 40))
	default:
	}
	return peak - idle, a
}

func conditionText(x *v1.FloatingIP, cond condition.Cond) string {
	c, ok := v1.GetCondition(x.Status.Conditions, cond)
	if !ok {
		return "not set"
	}
	return fmt.Sprintf("%s/%s %q", c.Status, c.Reason, c.Message)
}

// TestGuestServedReadOfLargeServicesIsBudgeted: whoever may create Services in one namespace of
// guest A creates 200 LoadBalancer Services for kube-vip-cloud-provider, each asking, in its
// kube-vip.io/loadbalancerIPs annotation, for 150,000 bytes of distinct addresses (about 10,000).
// The operator reads them back within one guest's budget (it held every address of every
// Service before: +169 to +184 MiB), A's FloatingIP says which limit stopped the read, and B is
// configured meanwhile.
func TestGuestServedReadOfLargeServicesIsBudgeted(t *testing.T) {
	shards.Take(t)
	w := newServedBudgetWorld(t, "hsvc", "10.217.0.")
	ctx := context.Background()
	var addrs strings.Builder
	next := netip.MustParseAddr("172.16.0.1")
	for i := 0; i < 200; i++ {
		addrs.Reset()
		for addrs.Len() < 150000-16 {
			if addrs.Len() > 0 {
				addrs.WriteByte(',')
			}
			addrs.WriteString(next.String())
			next = next.Next()
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tenant-%03d", i), Namespace: "default", Labels: map[string]string{"implementation": "kube-vip"},
				Annotations: map[string]string{kubevipconfig.LoadBalancerIPsAnnotation: addrs.String()}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		}
		if _, err := w.a.direct.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	grew, a := w.serve(t, "hsvc")
	looks, pages := w.proxy.ServiceLists(w.a.id)
	t.Logf("guest A was asked for its Services %d times in %d pages", looks, pages)
	if c, _ := v1.GetCondition(a.Status.Conditions, v1.Served); c.Reason != v1.ReasonServedReadLimited ||
		!strings.Contains(c.Message, "name more than 16 addresses each") || !strings.Contains(c.Message, "default/tenant-000") {
		t.Errorf("guest A's Served: %s; want ServedReadLimited naming the Services that name too many addresses", conditionText(a, v1.Served))
	}
	if pages > looks*kubevipconfig.MaxServicePages {
		t.Errorf("%d pages in %d looks; want at most %d a look", pages, looks, kubevipconfig.MaxServicePages)
	}
	if grew > guestMemoryBudget {
		t.Errorf("the operator's resident memory grew by %.1f MiB; want at most the %d MiB of one guest's budget", mib(grew), guestMemoryBudget>>20)
	}
}

// TestGuestServedReadOfHostilePagesIsBudgeted: guest A's API server answers the list of Services
// with pages of one huge Service each (an annotation of about 350,000 addresses, each page within
// what one answer may hold; pages of 369,000 took the operator to 2,093 MiB after 109 pages
// before), and
// then with empty pages without end (the read before stopped only at the pass's 5-minute end,
// after some 440 pages). Each costs at most one guest's budget and MaxServicePages pages a look,
// A's FloatingIP says so, and B is configured meanwhile.
func TestGuestServedReadOfHostilePagesIsBudgeted(t *testing.T) {
	shards.Take(t)
	w := newServedBudgetWorld(t, "hpage", "10.218.0.")
	w.proxy.SetServicePages(w.a.id, guests.HugeServicePages)
	grew, a := w.serve(t, "hpage")
	looks, pages := w.proxy.ServiceLists(w.a.id)
	t.Logf("pages of one huge Service: guest A was asked for its Services %d times in %d pages", looks, pages)
	if c, _ := v1.GetCondition(a.Status.Conditions, v1.Served); c.Reason != v1.ReasonServedReadLimited || !strings.Contains(c.Message, "default/huge-") {
		t.Errorf("guest A's Served: %s; want ServedReadLimited naming the huge Services", conditionText(a, v1.Served))
	}
	if pages > looks*kubevipconfig.MaxServicePages {
		t.Errorf("%d pages in %d looks; want at most %d a look", pages, looks, kubevipconfig.MaxServicePages)
	}
	if grew > guestMemoryBudget {
		t.Errorf("pages of one huge Service: the operator's resident memory grew by %.1f MiB; want at most %d MiB", mib(grew), guestMemoryBudget>>20)
	}

	w.proxy.SetServicePages(w.a.id, guests.EndlessEmptyPages)
	pageLimit := fmt.Sprintf("answered %d pages", kubevipconfig.MaxServicePages)
	x := w.f.waitFIPIn(w.a.id, w.a.name+"-kubevip", 60*time.Second, "ServedReadLimited naming the page limit", func(x *v1.FloatingIP) bool {
		c, _ := v1.GetCondition(x.Status.Conditions, v1.Served)
		return c.Reason == v1.ReasonServedReadLimited && strings.Contains(c.Message, pageLimit)
	})
	t.Logf("endless empty pages: guest A's Served: %s", conditionText(x, v1.Served))
	looksBefore, pagesBefore := w.proxy.ServiceLists(w.a.id)
	time.Sleep(6 * time.Second)
	looks, pages = w.proxy.ServiceLists(w.a.id)
	t.Logf("endless empty pages: %d looks in 6 s, %d pages", looks-looksBefore, pages-pagesBefore)
	// A look under way when the count was taken may finish its pages after it.
	if grown := pages - pagesBefore; grown > (looks-looksBefore+1)*kubevipconfig.MaxServicePages {
		t.Errorf("%d pages in %d looks; want at most %d a look", grown, looks-looksBefore, kubevipconfig.MaxServicePages)
	}
	if !v1.GuestConfigured.IsTrue(w.f.getFIPIn(w.b.id, w.b.name+"-kubevip")) {
		t.Error("guest B is not Configured")
	}
}
