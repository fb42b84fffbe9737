package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

// idleCost sums what the operator asked and spent while left alone with every cluster converged.
type idleCost struct {
	clusters int
	window   time.Duration // summed over the runs
	cpu      time.Duration
	mgmt     map[requestKey]float64
	guests   map[requestKey]float64
}

func newIdleCost(clusters int) *idleCost {
	return &idleCost{clusters: clusters, mgmt: map[requestKey]float64{}, guests: map[requestKey]float64{}}
}

// measure leaves the running operator p alone for d, counting its requests in the windows mgmt
// (the management API server) and guests (theirs), both opened before, and its CPU. A watch of a
// guest counts its share of a request, the time it was open in the idle window over the time it
// asked for (takeIdle). It fails if the operator exits meanwhile.
func (c *idleCost) measure(b *testing.B, p *controlplane.Process, d time.Duration, mgmt, guests *auditWindow) {
	before, err := processCPU(p)
	if err != nil {
		b.Fatal(err)
	}
	// Whatever the guest window held from before is the start-up's; start counting now.
	guests.take(b)
	start := time.Now()
	select {
	case <-p.Done():
		b.Fatalf("the operator exited while idle; its output ends:\n%s", rig.LastLines(p.Logs(), 60))
	case <-time.After(d):
	}
	after, err := processCPU(p)
	if err != nil {
		b.Fatal(err)
	}
	c.window += time.Since(start)
	c.cpu += after - before
	for k, v := range mgmt.take(b) {
		c.mgmt[k] += v
	}
	for k, v := range guests.takeIdle(b, start, time.Now()) {
		c.guests[k] += v
	}
	fmt.Printf("%s: idle for %.0f s: operator CPU %.2f s\n", b.Name(), time.Since(start).Seconds(), (after - before).Seconds())
}

// report prints and reports the idle figures per hour.
func (c *idleCost) report(b *testing.B) {
	if c.window == 0 {
		return
	}
	hours := c.window.Hours()
	sum := func(m map[requestKey]float64) float64 {
		var s float64
		for _, v := range m {
			s += v
		}
		return s
	}
	b.ReportMetric(sum(c.mgmt)/hours, "idle-requests/h")
	b.ReportMetric(sum(c.mgmt)/hours/float64(c.clusters), "idle-requests/cluster/h")
	b.ReportMetric(sum(c.guests)/hours, "idle-guest-requests/h")
	b.ReportMetric(c.cpu.Seconds()/hours, "idle-cpu-s/h")
	fmt.Printf("%s: idle %d clusters for %.0f s: operator CPU %.1f s per hour (%.2f ms per cluster and hour)\n", b.Name(), c.clusters, c.window.Seconds(), c.cpu.Seconds()/hours, 1000*c.cpu.Seconds()/hours/float64(c.clusters))
	fmt.Printf("%s: %s", b.Name(), requestTable("idle: the operator's requests of the management API server per hour, leases included", c.mgmt, hours))
	fmt.Printf("%s: %s", b.Name(), requestTable("idle: the operator's requests of the guests' API servers per hour", c.guests, hours))
}
