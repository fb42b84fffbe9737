package integration

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
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
	proxy := shared.StartClusterProxy(t)
	a := rancherCluster(t, proxy, "hflood-a", "c-m-hflooda1", nil, shared.StartGuest(t, "hflood-a"))
	b := rancherCluster(t, proxy, "hflood-b", "c-m-hfloodb1", nil, shared.StartGuest(t, "hflood-b"))
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
