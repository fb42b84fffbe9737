package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// largeBatch is how many FloatingIPs BenchmarkLargeRange creates at once.
const largeBatch = 500

// BenchmarkLargeRange fills one IPv4 /16 and one IPv6 /64 range with N FloatingIPs
// ($BENCH_LARGE_N, default 20000), created largeBatch at a time with the operator running, each
// batch once the one before holds its addresses. It reports what a claim costs at the start and
// at the end of the range, and the largest object the API server serves of each kind:
//
//	ms/claim-first   the first batch's time from its first create to its last address held, per FloatingIP
//	ms/claim-last    the same for the last batch
//	last/first       their ratio: how much dearer claim N is than claim 1
//	claims/s         N over the time of all batches
//	B-range-max      the largest the range got, as JSON
//	B-fip-max        the largest FloatingIP, as JSON
//	B-alloc-max      the largest FloatingIPAllocation, as JSON
//	alloc-writes/claim  writes on floatingips, floatingipranges and floatingipallocations per
//	                 FloatingIP, the benchmark's own create included
//
// It checks that every FloatingIP holds an address of its own and the range records N; it asserts
// nothing about time.
func BenchmarkLargeRange(b *testing.B) {
	n := largeN(b)
	r := shared.Rancher(b)
	p := runningBenchOperator(b, r, "kube-fip-large")
	fips := watchFloatingIPs(b)
	for _, c := range []struct{ name, cidr string }{{"ipv4-16", "10.190.0.0/16"}, {"ipv6-64", "fd00:190::/64"}} {
		b.Run(c.name, func(b *testing.B) { benchmarkLargeRange(b, r, p, fips, c.name, c.cidr, n) })
	}
}

// largeN is $BENCH_LARGE_N, a multiple of largeBatch (default 20000).
func largeN(b *testing.B) int {
	n := 20000
	if s := os.Getenv("BENCH_LARGE_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < largeBatch || v%largeBatch != 0 {
			b.Fatalf("BENCH_LARGE_N=%q: want a multiple of %d", s, largeBatch)
		}
		n = v
	}
	return n
}

func benchmarkLargeRange(b *testing.B, r *rancher.World, p *controlplane.Process, fips kubefipcontrollers.FloatingIPCache, name, cidr string, n int) {
	b.StopTimer()
	ns, rangeName := "c-m-large-"+name, "large-"+name
	if err := r.AddNamespace(ns); err != nil {
		b.Fatal(err)
	}
	if _, err := r.FIPs.FloatingIPRange().Create(&v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: rangeName},
		Spec:       v1.FloatingIPRangeSpec{IPRange: cidr, AllowedNamespaces: []string{ns}},
	}); err != nil {
		b.Fatal(err)
	}
	for iter := 0; iter < b.N; iter++ {
		before := apiRequests(b, r)
		fill := fillRange(b, r, p, fips, ns, rangeName, n)
		after := apiRequests(b, r)
		c := newConvergence(n)
		for k, v := range after {
			if d := v - before[k]; d > 0 {
				c.requests[k] += d
			}
		}
		c.runs = 1
		if err := allAllocatedIn(r, ns, rangeName, n); err != nil {
			b.Fatal(err)
		}
		first, last := fill.batches[0], fill.batches[len(fill.batches)-1]
		b.ReportMetric(first, "ms/claim-first")
		b.ReportMetric(last, "ms/claim-last")
		b.ReportMetric(last/first, "last/first")
		b.ReportMetric(float64(n)/fill.total.Seconds(), "claims/s")
		b.ReportMetric(float64(fill.rangeMax), "B-range-max")
		b.ReportMetric(float64(largestFIP(b, r, ns)), "B-fip-max")
		b.ReportMetric(float64(largestAllocation(b, r, rangeName)), "B-alloc-max")
		b.ReportMetric(c.perCluster(func(k requestKey) bool { return k.write() && k.allocation() }), "alloc-writes/claim")
		// Printed, not logged: the testing package keeps only the first 10 lines of a benchmark's log.
		fmt.Printf("%s: ms per claim by batch of %d:", b.Name(), largeBatch)
		for i, ms := range fill.batches {
			if i == 0 || (i+1)%(len(fill.batches)/10+1) == 0 || i == len(fill.batches)-1 {
				fmt.Printf(" #%d %.2f", i+1, ms)
			}
		}
		fmt.Println()
		emptyRange(b, r, ns, rangeName)
	}
	deleteRangeAndWait(b, r, rangeName)
}

// filling is what fillRange measured.
type filling struct {
	batches  []float64 // ms per claim, batch by batch
	total    time.Duration
	rangeMax int // the largest the range got, in bytes of JSON
}

// fillRange creates n FloatingIPs for range rangeName in namespace ns, largeBatch at a time, each
// batch once the one before holds its addresses, and times every batch.
func fillRange(b *testing.B, r *rancher.World, p *controlplane.Process, fips kubefipcontrollers.FloatingIPCache, ns, rangeName string, n int) filling {
	var out filling
	for start := 0; start < n; start += largeBatch {
		names := make([]string, largeBatch)
		for i := range names {
			names[i] = fmt.Sprintf("fip-%05d", start+i)
		}
		b.StartTimer()
		t0 := time.Now()
		if err := rig.Parallel(names, func(name string) error {
			_, err := r.FIPs.FloatingIP().Create(&v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
				Annotations: map[string]string{v1.AnnotationFloatingIPRange: rangeName}}})
			return err
		}); err != nil {
			b.Fatal(err)
		}
		waitAllocated(b, p, fips, ns, names)
		d := time.Since(t0)
		b.StopTimer()
		out.total += d
		out.batches = append(out.batches, float64(d.Microseconds())/1000/largeBatch)
		if x, err := r.FIPs.FloatingIPRange().Get(rangeName, metav1.GetOptions{}); err == nil {
			out.rangeMax = max(out.rangeMax, jsonSize(b, x))
		}
	}
	return out
}

// waitAllocated waits until every FloatingIP names in ns holds an address, as the watch shows
// them; it fails if the operator exits or after ten minutes.
func waitAllocated(b *testing.B, p *controlplane.Process, fips kubefipcontrollers.FloatingIPCache, ns string, names []string) {
	held := 0
	// The cache is local: look often, so that the times measured are close to the events.
	err := rig.UntilEvery(10*time.Millisecond, 10*time.Minute, "every FloatingIP holding an address", p.Exited, func() (bool, error) {
		held = 0
		for _, name := range names {
			if x, err := fips.Get(ns, name); err == nil && suite.Allocated(x) {
				held++
			}
		}
		return held == len(names), nil
	})
	if err != nil {
		b.Fatalf("%v: %d of %d FloatingIPs hold an address; the operator's output ends:\n%s", err, held, len(names), rig.LastLines(p.Logs(), 60))
	}
}

// allAllocatedIn checks, from the API server, that ns's n FloatingIPs each hold an address of
// their own in rangeName, that the range has an allocation for each and counts n.
func allAllocatedIn(r *rancher.World, ns, rangeName string, n int) error {
	list, err := r.FIPs.FloatingIP().List(ns, metav1.ListOptions{})
	if err != nil {
		return err
	}
	seen := map[string]string{}
	for i := range list.Items {
		x := &list.Items[i]
		if !suite.Allocated(x) || x.Status.Range != rangeName {
			return fmt.Errorf("%s holds no address in %s", x.Name, rangeName)
		}
		if other, dup := seen[x.Status.IPAddress]; dup {
			return fmt.Errorf("%s is held by both %s and %s", x.Status.IPAddress, other, x.Name)
		}
		seen[x.Status.IPAddress] = x.Name
	}
	if len(seen) != n {
		return fmt.Errorf("%d FloatingIPs hold an address, want %d", len(seen), n)
	}
	allocs, err := r.FIPs.FloatingIPAllocation().List(metav1.ListOptions{LabelSelector: v1.LabelRange + "=" + v1.RangeLabelValue(rangeName)})
	if err != nil {
		return err
	}
	if len(allocs.Items) != n {
		return fmt.Errorf("range %s has %d FloatingIPAllocations, want %d", rangeName, len(allocs.Items), n)
	}
	return rig.Until(time.Minute, fmt.Sprintf("range %s counting %d used", rangeName, n), nil, func() (bool, error) {
		x, err := r.FIPs.FloatingIPRange().Get(rangeName, metav1.GetOptions{})
		return err == nil && x.Status.Used == int64(n), err
	})
}

// largestFIP is the size of the largest FloatingIP in ns, as JSON.
func largestFIP(b *testing.B, r *rancher.World, ns string) int {
	list, err := r.FIPs.FloatingIP().List(ns, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return largest(b, list.Items)
}

// largestAllocation is the size of the largest FloatingIPAllocation of rangeName, as JSON.
func largestAllocation(b *testing.B, r *rancher.World, rangeName string) int {
	list, err := r.FIPs.FloatingIPAllocation().List(metav1.ListOptions{LabelSelector: v1.LabelRange + "=" + v1.RangeLabelValue(rangeName)})
	if err != nil {
		b.Fatal(err)
	}
	return largest(b, list.Items)
}

// largest is the size of the largest of items, as JSON.
func largest[T any](b *testing.B, items []T) int {
	size := 0
	for i := range items {
		size = max(size, jsonSize(b, &items[i]))
	}
	return size
}

func jsonSize(b *testing.B, x any) int {
	raw, err := json.Marshal(x)
	if err != nil {
		b.Fatal(err)
	}
	return len(raw)
}

// emptyRange deletes ns's FloatingIPs and waits until the operator released every address of
// rangeName.
func emptyRange(b *testing.B, r *rancher.World, ns, rangeName string) {
	list, err := r.FIPs.FloatingIP().List(ns, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, len(list.Items))
	for i := range list.Items {
		names[i] = list.Items[i].Name
	}
	if err := rig.Parallel(names, func(name string) error { return r.FIPs.FloatingIP().Delete(ns, name, nil) }); err != nil {
		b.Fatal(err)
	}
	// Each look lists every allocation of the range: look seldom.
	if err := rig.UntilEvery(2*time.Second, 15*time.Minute, fmt.Sprintf("range %s holding no address after its FloatingIPs were deleted", rangeName), nil, func() (bool, error) {
		return len(suite.HeldIn(b, r.FIPs, rangeName)) == 0, nil
	}); err != nil {
		b.Fatal(err)
	}
}
