package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
	"github.com/kubefip/kube-fip-operator/test/rig/harvester"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
)

// benchHarvesters is how many Harvester clusters the guests of BenchmarkHarvesterReads are on.
const benchHarvesters = 3

// BenchmarkHarvesterReads measures what reading the Harvester clusters costs, with 1,000 guest
// clusters ($BENCH_HARVESTER_GUESTS) on 3 Harvester clusters, each a real API server behind the
// test cluster proxy holding Harvester's CRDs, one VM network, a load balancer and a DHCP pool of
// it, and a VM per guest node (one per guest) whose guest agent reports its address there; one
// range per Harvester cluster. It runs the start-up backlog twice, on clusters of their own: with
// no Harvester cluster read (--harvester-read-interval=-1s), then as installed (every 2 minutes),
// and reports, as the median of $BENCH_HARVESTER_ROUNDS rounds (default 3; each round runs both,
// in turns first)
//
//	s-to-converge-unread, s-to-converge-read   operator started → every guest holds its address
//	converge-ratio                             the second over the first
//	cpu-s-unread, cpu-s-read, cpu-ratio        the operator's processor time in that while
//
// The processor time is the operator's own: the wall time also holds what the Harvester clusters'
// API servers, on this machine here, spend answering the reads.
//
// and after the last run that reads leaves the operator alone for $BENCH_HARVESTER_IDLE_SECONDS
// (default 360, three reads of each cluster) and reports the requests the proxy forwarded to the Harvester clusters:
//
//	harvester-requests/cluster/h               per Harvester cluster and hour
//	harvester-requests/range/h                 the same per range (one range per cluster here)
//
// with their table by method and resource. It asserts nothing about time. $BENCH_PROFILE names a
// directory for each run's operator's profiles, as for BenchmarkStartup.
func BenchmarkHarvesterReads(b *testing.B) {
	n := envInt(b, "BENCH_HARVESTER_GUESTS", 1000)
	idle := time.Duration(envInt(b, "BENCH_HARVESTER_IDLE_SECONDS", 360)) * time.Second
	r := shared.Rancher(b)
	fips := watchFloatingIPs(b)
	proxy := shared.StartClusterProxy(b)
	clusters := make([]*harvester.Cluster, benchHarvesters)
	for i := range clusters {
		g, err := shared.Env.StartGuest(fmt.Sprintf("bench-harvester-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(g.StopSoon)
		rig.Must(b, harvester.Install(context.Background(), g.Config))
		if clusters[i], err = harvester.NewCluster(g.Config); err != nil {
			b.Fatal(err)
		}
		display := fmt.Sprintf("hvb-%d", i)
		rig.Must(b, harvester.Register(r, proxy, g.Name, g.Config, "c-m-"+display, display, "token-"+display))
		rig.Must(b, harvesterNetwork(clusters[i], i))
	}
	rounds := max(envInt(b, "BENCH_HARVESTER_ROUNDS", 3), 1)
	var unread, read, cpuUnread, cpuRead []float64
	for round := range rounds {
		// Alternate which goes first, so that whatever the machine does over time falls on both.
		runs := []bool{false, true}
		if round%2 == 1 {
			runs = []bool{true, false}
		}
		for _, reads := range runs {
			s, cpu := harvesterRun(b, r, fips, clusters, n, round, reads, reads && round == rounds-1 && idle > 0, func() {
				proxy.ResetRequests()
				time.Sleep(idle)
				reportHarvesterRequests(b, proxy, idle)
			})
			if reads {
				read, cpuRead = append(read, s), append(cpuRead, cpu)
			} else {
				unread, cpuUnread = append(unread, s), append(cpuUnread, cpu)
			}
		}
	}
	mu, mr := median(unread), median(read)
	b.ReportMetric(mu, "s-to-converge-unread")
	b.ReportMetric(mr, "s-to-converge-read")
	b.ReportMetric(mr/mu, "converge-ratio")
	cu, cr := median(cpuUnread), median(cpuRead)
	b.ReportMetric(cu, "cpu-s-unread")
	b.ReportMetric(cr, "cpu-s-read")
	b.ReportMetric(cr/cu, "cpu-ratio")
	fmt.Printf("%s: start-up backlog, median of %d rounds: %.1f s without reading Harvester %v, %.1f s reading it %v: %.2fx\n",
		b.Name(), rounds, mu, unread, mr, read, mr/mu)
	fmt.Printf("%s: the operator's processor time in it, median: %.1f s without reading Harvester %v, %.1f s reading it %v: %.2fx\n",
		b.Name(), cu, cpuUnread, cr, cpuRead, cr/cu)
}

// harvesterRun is one start-up backlog: n guests on the clusters and a range on each, the
// operator started reading the Harvester clusters or not, the seconds until every guest holds
// its address and the operator's processor time until then; with idle, idle runs with the
// operator still there. Then everything is removed.
func harvesterRun(b *testing.B, r *rancher.World, fips *fipWatch, clusters []*harvester.Cluster, n, round int, reads, withIdle bool, idle func()) (float64, float64) {
	name, flags := "unread", []string{"--harvester-read-interval=-1s"}
	if reads {
		name, flags = "read", nil
	}
	prefix := fmt.Sprintf("hv%s%d", name, round)
	ns := "kube-fip-" + prefix
	rig.Must(b, r.AddNamespace(ns))
	var all []string
	var worlds []benchGuests
	for i, c := range clusters {
		display := fmt.Sprintf("hvb-%d", i)
		rangeName := fmt.Sprintf("range-%s-%d", prefix, i)
		rig.Must(b, addBenchRange(r, rangeName, display, fmt.Sprintf("10.%d.0.0/16", 200+10*i+len(name))))
		s := newBenchGuests(fmt.Sprintf("%s-%d", prefix, i), n/benchHarvesters, display)
		rig.Must(b, addGuests(r, s))
		rig.Must(b, guestNodes(c, s, i))
		all = append(all, s.names...)
		worlds = append(worlds, s)
	}
	var stop func()
	var cpu float64
	prof := newBenchProfiles(b, "-"+prefix)
	t := newConvergence(len(all)).measure(b, r, fips, all, func() *controlplane.Process {
		p := startBenchOperator(b, ns, prof, flags...)
		stop = func() { _ = p.Stop(30 * time.Second) }
		return p
	}, func(p *controlplane.Process) time.Time {
		used, err := processCPU(p)
		rig.Must(b, err)
		cpu = used.Seconds()
		prof.snapshot(b)
		return time.Now()
	})
	took := t.done.Sub(t.start).Seconds()
	fmt.Printf("%s: round %d: every address held %.1f s after the start (%.1f s of the operator's processor time), Harvester clusters %s\n",
		b.Name(), round, took, cpu, name)
	if withIdle {
		idle()
	}
	// The operator still runs: it releases the addresses and the ranges' finalizers.
	for i, s := range worlds {
		teardown(b, r, fmt.Sprintf("range-%s-%d", prefix, i), s)
		deleteRangeAndWait(b, r, fmt.Sprintf("range-%s-%d", prefix, i))
		rig.Must(b, dropGuestNodes(clusters[i], s))
	}
	stop()
	return took, cpu
}

// median is the middle of xs, the mean of the two middle ones for an even count.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// harvesterNetwork creates what Harvester i has on its VM network default/vlan10: the network, a
// load balancer pool and a DHCP pool of it.
func harvesterNetwork(c *harvester.Cluster, i int) error {
	ctx := context.Background()
	subnet := fmt.Sprintf("10.%d.0.0/16", 230+i)
	if _, err := c.NAD(ctx, "default", "vlan10", "mgmt", 10, subnet, fmt.Sprintf("10.%d.0.1", 230+i)); err != nil {
		return err
	}
	if _, err := c.CreateLBPool(ctx, harvester.LBPool{Name: "lb-vlan10", Network: "default/vlan10",
		Ranges: []harvester.Range{{Subnet: subnet, RangeStart: fmt.Sprintf("10.%d.200.1", 230+i), RangeEnd: fmt.Sprintf("10.%d.200.254", 230+i)}}}); err != nil {
		return err
	}
	_, err := c.CreateDHCPPool(ctx, harvester.DHCPPool{Namespace: "default", Name: "dhcp-vlan10", Network: "default/vlan10", CIDR: subnet,
		ServerIP: fmt.Sprintf("10.%d.0.2", 230+i), Router: fmt.Sprintf("10.%d.0.1", 230+i), Start: fmt.Sprintf("10.%d.1.1", 230+i), End: fmt.Sprintf("10.%d.100.254", 230+i)})
	return err
}

// guestNodes creates a VM per guest of s on Harvester c, a node of it whose agent reports an
// address of the DHCP pool on default/vlan10.
func guestNodes(c *harvester.Cluster, s benchGuests, i int) error {
	index := map[string]int{}
	for k, name := range s.names {
		index[name] = k
	}
	return rig.Parallel(s.names, func(name string) error {
		k := index[name]
		return c.CreateVM(context.Background(), harvester.VM{Namespace: "default", Name: name + "-pool1-5c6d7e8f9-node0", GuestCluster: name,
			NICs: []harvester.NIC{{Name: "nic-0", Network: "default/vlan10", Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 230+i, 1+k/250, 1+k%250)}}}})
	})
}

// dropGuestNodes deletes the VMs of guestNodes.
func dropGuestNodes(c *harvester.Cluster, s benchGuests) error {
	return rig.Parallel(s.names, func(name string) error {
		return c.DeleteVM(context.Background(), "default", name+"-pool1-5c6d7e8f9-node0")
	})
}

// reportHarvesterRequests reports the requests the proxy forwarded in window, per Harvester
// cluster and per range and hour.
func reportHarvesterRequests(b *testing.B, proxy *guests.ClusterProxy, window time.Duration) {
	per := float64(benchHarvesters) * window.Hours()
	byKey := map[requestKey]float64{}
	var total float64
	for k, v := range proxy.Requests() {
		verb, resource, _ := strings.Cut(k, " ")
		byKey[requestKey{verb: verb, resource: resource}] += float64(v)
		total += float64(v)
	}
	b.ReportMetric(total/per, "harvester-requests/cluster/h")
	b.ReportMetric(total/per, "harvester-requests/range/h")
	fmt.Printf("%s: %s", b.Name(), requestTable("the operator's requests of each Harvester cluster per hour, left alone", byKey, per))
}

// envInt is the whole number in variable name, def when it is not set.
func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		b.Fatalf("%s=%q: want a whole number", name, s)
	}
	return v
}
