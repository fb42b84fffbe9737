package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
)

// BenchmarkStartupConvergence creates N complete Harvester guest clusters and their range with no
// operator running — an operator installed into, or restarted in, a management cluster that
// already has them — then starts the operator and reports the time until every cluster holds its
// address and the API requests that took. It checks that every cluster got exactly one address
// and no address was handed out twice; it asserts nothing about time. The operator's flags end
// with the words of $BENCH_OPERATOR_ARGS (e.g. --kube-api-qps=50), to compare settings.
// The operator's memory environment is the one the chart gives it by default (the Go runtime's
// limit derived from the container's memory limit and the chart's GOGC, see chartRuntimeEnv);
// $BENCH_GO_MEMORY_LIMIT is given as GOMEMLIMIT instead ("off": no limit), to measure the operator
// without it, and $BENCH_GOGC as GOGC.
//
//	s-to-converge             operator process started → last address held
//	s-to-create               operator process started → every FloatingIP exists (discovery's part)
//	s-to-controllers-running  operator process started → it logged "controllers running" (Lease
//	                          acquired, caches synced), to within 50 ms
//	clusters/s                N / s-to-converge
//	MiB-peak-rss              the operator process's peak resident memory (VmHWM) from its start
//	                          until it converged (with guests: configured every guest); each run
//	                          also prints it with the memory limit it ran under
//	cpu-s-operator            the operator's CPU seconds (user and system) in that time
//	cpu-s-machine             the whole machine's CPU seconds in that time: the API server, etcd
//	                          and the benchmark's watch besides the operator
//	machine-busy              the share of the machine's CPUs busy in that time (1: all of them)
//
// and, per cluster, the requests the API server counted from just before the process started until
// the last address was held (see convergence.report): alloc-writes, alloc-reads, events,
// conflicts, throttled and writes. Nothing else writes in that window.
func BenchmarkStartupConvergence(b *testing.B) {
	r := shared.Rancher(b)
	fips := watchFloatingIPs(b)
	for _, size := range []struct {
		n    int
		cidr string
	}{{100, "10.181.0.0/16"}, {1000, "10.182.0.0/16"}, {2000, "10.186.0.0/16"}} {
		b.Run(fmt.Sprintf("N=%d", size.n), func(b *testing.B) { benchmarkStartup(b, r, fips, size.n, size.cidr) })
	}
}

func benchmarkStartup(b *testing.B, r *rancher.World, fips *fipWatch, n int, cidr string) {
	b.StopTimer()
	c := newConvergence(n)
	for iter := 0; iter < b.N; iter++ {
		startupRun(b, r, fips, c, fmt.Sprintf("start%d-%d", n, iter), n, cidr, nil)
	}
	c.report(b)
	if s := c.mean("s-to-converge"); s > 0 {
		b.ReportMetric(float64(n)/s, "clusters/s")
	}
}

// startupWorld creates what a start-up run finds before the operator starts: the operator's
// namespace (one of its own for its Lease, so a run never waits for an earlier one's), the
// Harvester cluster and its range on cidr, and n complete guest clusters. It returns the
// namespace, the range's name and the guests.
func startupWorld(b *testing.B, r *rancher.World, prefix string, n int, cidr string) (string, string, benchGuests) {
	harv := "harv-" + prefix
	rangeName := "range-" + prefix
	ns := "kube-fip-" + prefix
	if err := r.AddNamespace(ns); err != nil {
		b.Fatal(err)
	}
	if err := addBenchRange(r, rangeName, harv, cidr); err != nil {
		b.Fatal(err)
	}
	guests := newBenchGuests(prefix, n, harv)
	if err := addGuests(r, guests); err != nil {
		b.Fatal(err)
	}
	return ns, rangeName, guests
}

// startupRun is one iteration: guests and range created, operator started and measured until
// every guest holds its address, then everything it allocated released and the range deleted while
// the operator still runs (its finalizers), and the operator stopped. connect, when given, makes
// the guests reachable before the operator starts; the run then also waits until every guest is
// configured.
func startupRun(b *testing.B, r *rancher.World, fips *fipWatch, c *convergence, prefix string, n int, cidr string, connect func(benchGuests) error) {
	ns, rangeName, guests := startupWorld(b, r, prefix, n, cidr)
	if connect != nil {
		if err := connect(guests); err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := dropKubeconfigs(r, guests); err != nil {
				b.Error(err)
			}
		}()
	}

	var p *controlplane.Process
	defer func() {
		if p != nil {
			_ = p.Stop(30 * time.Second)
		}
	}()
	running := make(chan time.Time, 1)
	prof := newBenchProfiles(b)
	machineBefore, _, err := machineCPU()
	if err != nil {
		b.Fatal(err)
	}
	t := c.measure(b, r, fips, guests.names, func() *controlplane.Process {
		p = startBenchOperator(b, ns, prof)
		go func(p *controlplane.Process) {
			if p.WaitForLog(context.Background(), "controllers running", 10*time.Minute) == nil {
				running <- time.Now()
			}
		}(p)
		return p
	})
	c.time("s-to-converge", t.done.Sub(t.start))
	c.time("s-to-create", t.allExist.Sub(t.start))
	if connect != nil {
		configured := waitGuestsConfigured(b, p, fips, guests.names, 10*time.Minute).Sub(t.start)
		c.time("s-to-guests-configured", configured)
		// Printed as well: a run whose teardown fails reports no metric.
		fmt.Printf("%s: %.1f s-to-converge, %.1f s-to-guests-configured\n", b.Name(), t.done.Sub(t.start).Seconds(), configured.Seconds())
	}
	// Read while the operator still runs, once it has converged (and configured every guest).
	c.peak(b, p)
	c.cpu(b, p, t.start, machineBefore)
	prof.snapshot(b)
	select {
	case at := <-running:
		c.time("s-to-controllers-running", at.Sub(t.start))
	case <-time.After(5 * time.Second):
		b.Fatal("the operator converged but did not log \"controllers running\"")
	}
	teardown(b, r, rangeName, guests.names)
	deleteRangeAndWait(b, r, rangeName)
}
