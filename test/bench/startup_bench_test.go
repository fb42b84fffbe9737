package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
)

// BenchmarkStartup creates N complete Harvester guest clusters and their range with no operator
// running — an operator installed into, or restarted in, a management cluster that already has
// them — then starts the operator and measures it until every cluster holds its address; and does
// so twice side by side in one run: first with no guest reachable, then, on N clusters of its own,
// with every guest reachable through the test cluster proxy, as a new installation meets a Rancher
// that already runs its clusters (see connectGuests). So the guest passes — the kubeconfig
// Secret's GET, the probe through the proxy, the kube-vip ConfigMap — run alongside the
// allocations, under the configuration a new installation has (kubevipGuestInstall
// clusterlabel: no chart for an unlabelled cluster). The clusters share benchGuestServers real
// guest API servers, each cluster with a kube-system of its own there (its kube-vip ConfigMap is
// its own, as in a guest of its own); a pass costs the operator the same whichever guest answers. With the
// guests, the operator is then left alone for $BENCH_IDLE_SECONDS (default 480, one interval of
// operateGuestClusterInterval at its default: every cluster's periodic pass falls in it; 0 for
// none) and what it asked and spent in that time is reported per hour.
//
// It checks that every cluster got exactly one address and no address was handed out twice; it
// asserts nothing about time. The operator's flags end with the words of $BENCH_OPERATOR_ARGS
// (e.g. --kube-api-qps=50), to compare settings. The operator's memory environment is the one the
// chart gives it by default (the Go runtime's limit derived from the container's memory limit and
// the chart's GOGC, see chartRuntimeEnv); $BENCH_GO_MEMORY_LIMIT is given as GOMEMLIMIT instead
// ("off": no limit), and $BENCH_GOGC as GOGC.
//
// Reported for each of the two runs, those with guests ending in -with-guests:
//
//	s-to-converge             operator process started → last address held
//	s-to-create               operator process started → every FloatingIP exists (discovery's part)
//	s-to-controllers-running  operator process started → it logged "controllers running" (Lease
//	                          acquired, caches synced), to within 50 ms
//	s-to-guests-configured    (with guests) operator process started → every FloatingIP
//	                          GuestConfigured=True
//	MiB-peak-rss              the operator process's peak resident memory (VmHWM) from its start
//	                          until it converged (with guests: configured every guest); each run
//	                          also prints it with the memory limit it ran under
//	cpu-s-operator            the operator's CPU seconds (user and system) in that time
//	cpu-s-machine             the whole machine's CPU seconds in that time: the API server, etcd
//	                          and the benchmark's watch besides the operator
//	machine-busy              the share of the machine's CPUs busy in that time (1: all of them)
//
// and, per cluster, the operator's requests of the management API server from its audit log, from
// just before the process started until the last address was held — with the guests, until every
// guest was configured, so that the guest passes' reads and writes count too — (see
// convergence.report), with the table of them by verb, resource and code. Besides:
//
//	converge-ratio            s-to-converge-with-guests / s-to-converge: what guest work costs
//	                          the allocations
//	ms-cpu/cluster            the operator's CPU per cluster through the backlog without guests
//	guest-requests/cluster    the operator's requests of the guests' API servers, from their audit
//	                          logs, until every guest was configured (a start-up gives each guest
//	                          one pass), with their table
//	idle-requests/h, idle-requests/cluster/h, idle-guest-requests/h, idle-cpu-s/h
//	                          the operator's requests of the management API server (leases
//	                          included) and of the guests, and its CPU, per hour left alone with
//	                          every cluster converged and configured, with their tables
func BenchmarkStartup(b *testing.B) {
	r := shared.Rancher(b)
	fips := watchFloatingIPs(b)
	proxy := shared.StartClusterProxy(b)
	servers := make([]*controlplane.Guest, benchGuestServers)
	for i := range servers {
		g, err := shared.Env.StartGuest(fmt.Sprintf("bench-guest-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(g.StopSoon)
		servers[i] = g
	}
	idle := idleWindow(b)
	for i, n := range []int{100, 1000, 5000} {
		// The testing package may call the function more than once (b.N=1 first with -benchtime
		// Nx): each call's clusters are named apart from the last call's.
		calls := 0
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			calls++
			b.StopTimer()
			alone, with := newConvergence(n), newConvergence(n)
			with.suffix = "-with-guests"
			g := &withGuests{proxy: proxy, servers: servers, idle: idle, requests: map[requestKey]float64{}, idleCost: newIdleCost(n)}
			for iter := 0; iter < b.N; iter++ {
				startupRun(b, r, fips, alone, fmt.Sprintf("start%d-%d-%d", n, calls, iter), n, fmt.Sprintf("10.%d.0.0/16", 181+2*i), nil)
				startupRun(b, r, fips, with, fmt.Sprintf("guests%d-%d-%d", n, calls, iter), n, fmt.Sprintf("10.%d.0.0/16", 182+2*i), g)
			}
			alone.report(b)
			with.report(b)
			if s := alone.mean("s-to-converge"); s > 0 {
				b.ReportMetric(float64(n)/s, "clusters/s")
				ratio := with.mean("s-to-converge") / s
				b.ReportMetric(ratio, "converge-ratio")
				fmt.Printf("%s: every address held after %.1f s without guests, %.1f s with every guest reachable: %.2fx\n", b.Name(), s, with.mean("s-to-converge"), ratio)
			}
			b.ReportMetric(1000*alone.mean("cpu-s-operator")/float64(n), "ms-cpu/cluster")
			g.report(b, n, with.runs)
		})
	}
}

// withGuests is what a start-up run with every guest reachable needs, and what it measured
// beyond the convergence.
type withGuests struct {
	proxy   *guests.ClusterProxy
	servers []*controlplane.Guest
	idle    time.Duration
	// requests are the operator's requests of the guests' API servers until every guest was
	// configured, summed over the runs.
	requests map[requestKey]float64
	idleCost *idleCost
}

// guestLogs are the audit logs of the guests' API servers.
func (g *withGuests) guestLogs() []*controlplane.AuditLog {
	logs := make([]*controlplane.AuditLog, len(g.servers))
	for i, s := range g.servers {
		logs[i] = s.Audit
	}
	return logs
}

func (g *withGuests) report(b *testing.B, n, runs int) {
	if runs == 0 {
		return
	}
	per := float64(n * runs)
	var total float64
	for _, v := range g.requests {
		total += v
	}
	b.ReportMetric(total/per, "guest-requests/cluster")
	fmt.Printf("%s: %s", b.Name(), requestTable("the operator's requests of the guests' API servers per cluster, from their audit logs, until every guest was configured", g.requests, per))
	g.idleCost.report(b)
}

// idleWindow is how long the operator is left alone after a start-up with guests:
// $BENCH_IDLE_SECONDS, by default one operateGuestClusterInterval at its default.
func idleWindow(b *testing.B) time.Duration {
	s := os.Getenv("BENCH_IDLE_SECONDS")
	if s == "" {
		return 480 * time.Second
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		b.Fatalf("BENCH_IDLE_SECONDS=%q: want a whole number of seconds", s)
	}
	return time.Duration(n) * time.Second
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

// startupRun is one run: guests and range created, operator started and measured until every
// guest holds its address, then everything it allocated released and the range deleted while the
// operator still runs (its finalizers), and the operator stopped. With g, the guests are made
// reachable before the operator starts; the run then also waits until every guest is configured,
// counts the operator's requests of the guests, and leaves the operator alone for g.idle.
func startupRun(b *testing.B, r *rancher.World, fips *fipWatch, c *convergence, prefix string, n int, cidr string, g *withGuests) {
	ns, rangeName, guests := startupWorld(b, r, prefix, n, cidr)
	var guestWindow *auditWindow
	if g != nil {
		if err := connectGuests(r, g.proxy, g.servers, guests); err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := dropKubeconfigs(r, guests); err != nil {
				b.Error(err)
			}
		}()
		guestWindow = openWindow(b, g.guestLogs()...)
	}

	var p *controlplane.Process
	defer func() {
		if p != nil {
			_ = p.Stop(30 * time.Second)
		}
	}()
	running := make(chan time.Time, 1)
	prof := newBenchProfiles(b, c.suffix)
	machineBefore, _, err := machineCPU()
	if err != nil {
		b.Fatal(err)
	}
	var settle func(*controlplane.Process) time.Time
	if g != nil {
		// The guests' passes follow the allocations: the window of requests stays open until
		// every guest is configured, so that their reads and status writes are counted too.
		settle = func(p *controlplane.Process) time.Time {
			return waitGuestsConfigured(b, p, fips, guests.names, 10*time.Minute)
		}
	}
	t := c.measure(b, r, fips, guests.names, func() *controlplane.Process {
		p = startBenchOperator(b, ns, prof)
		go func(p *controlplane.Process) {
			if p.WaitForLog(context.Background(), "controllers running", 10*time.Minute) == nil {
				running <- time.Now()
			}
		}(p)
		return p
	}, settle)
	c.time("s-to-converge", t.done.Sub(t.start))
	c.time("s-to-create", t.allExist.Sub(t.start))
	if g != nil {
		configured := t.settled.Sub(t.start)
		c.time("s-to-guests-configured", configured)
		for k, v := range guestWindow.take(b) {
			g.requests[k] += v
		}
		// Printed as well: a run whose teardown fails reports no metric.
		fmt.Printf("%s: %.1f s-to-converge, %.1f s-to-guests-configured\n", b.Name(), t.done.Sub(t.start).Seconds(), configured.Seconds())
	} else {
		fmt.Printf("%s: %.1f s-to-converge without guests\n", b.Name(), t.done.Sub(t.start).Seconds())
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
	if g != nil && g.idle > 0 {
		g.idleCost.measure(b, p, g.idle, openWindow(b, shared.Env.Audit), guestWindow)
	}
	teardown(b, r, rangeName, guests)
	deleteRangeAndWait(b, r, rangeName)
}
