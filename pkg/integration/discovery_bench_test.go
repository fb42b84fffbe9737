package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/testenv"
)

// BenchmarkDiscoveryConvergence creates N complete Harvester guest clusters at once — namespace,
// provisioning cluster (and its management cluster), cloud credential and HarvesterConfig — against
// the real API server with the operator running, and reports the time until every one holds its
// address and the API writes that took. It checks that every cluster got exactly one address and no
// address was handed out twice; it asserts nothing about time.
//
//	s-to-converge            first object created → last address held
//	s-to-create              first object created → every FloatingIP exists (discovery's part)
//	s-after-last-created     last object created → last address held
//	writes/cluster           every API write (POST, PUT, PATCH, DELETE) in that time, per cluster
//	operator-writes/cluster  the operator's share: writes to FloatingIPs, ranges and Events
func BenchmarkDiscoveryConvergence(b *testing.B) {
	ns := "kube-fip-bench"
	r := newRancher(b)
	r.ensureNamespace(ns)
	args := []string{"--kubeconfig", shared.env.Kubeconfig, "--namespace", ns, "--metrics-bind-address", "127.0.0.1", "--metrics-port", strconv.Itoa(loopbackPort(b))}
	p, err := testenv.StartOperator(shared.operator, nil, nil, args...)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Stop(30 * time.Second) }()
	if err := p.WaitForLog(bg(), "controllers running", time.Minute); err != nil {
		b.Fatal(err)
	}
	// Progress is read from a watch, not by listing every FloatingIP again and again, which would
	// load the API server being measured.
	ctx, cancel := context.WithCancel(bg())
	defer cancel()
	factory := kubefip.NewFactoryFromConfigOrDie(shared.env.Config)
	fips := factory.Kubefip().V1().FloatingIP().Cache()
	if err := factory.Start(ctx, 1); err != nil {
		b.Fatal(err)
	}
	if err := factory.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	for i, n := range []int{10, 100, 1000} {
		cidr := fmt.Sprintf("10.%d.0.0/16", 177+i)
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) { benchmarkConvergence(b, r, fips, n, cidr) })
	}
}

func benchmarkConvergence(b *testing.B, r *rancher, fips kubefipcontrollers.FloatingIPCache, n int, cidr string) {
	b.StopTimer()
	harv := fmt.Sprintf("harv-bench%d", n)
	rangeName := fmt.Sprintf("disc-bench%d", n)
	r.must(r.addManagementCluster("c-m-"+harv, harv))
	if _, err := r.fips.FloatingIPRange().Create(&v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: rangeName, Annotations: map[string]string{
			v1.AnnotationHarvesterClusterName: harv, v1.AnnotationHarvesterNetworkName: "vlan10"}},
		Spec: v1.FloatingIPRangeSpec{IPRange: cidr},
	}); err != nil {
		b.Fatal(err)
	}
	defer r.deleteRange(b, rangeName)

	var total, operator, toConverge, toCreate, afterCreated float64
	for iter := 0; iter < b.N; iter++ {
		guests := make([]string, n)
		byName := map[string]guest{}
		for i := range guests {
			g := guest{name: fmt.Sprintf("bench%d-%d-%04d", n, iter, i), harvester: "c-m-" + harv, display: harv, network: vlan("vlan10")}
			g.id = "c-m-" + g.name
			guests[i], byName[g.name] = g.name, g
		}
		before := r.apiWrites(b)
		b.StartTimer()
		start := time.Now()
		if err := parallel(guests, func(name string) error { return r.addGuest(byName[name]) }); err != nil {
			b.Fatal(err)
		}
		created := time.Now()
		allExist, done := waitConverged(b, fips, guests, 10*time.Minute)
		b.StopTimer()
		after := r.apiWrites(b)
		if err := r.allAllocated(guests); err != nil {
			b.Fatal(err)
		}

		toConverge += done.Sub(start).Seconds()
		toCreate += allExist.Sub(start).Seconds()
		afterCreated += done.Sub(created).Seconds()
		var breakdown []string
		for resource, count := range after {
			delta := count - before[resource]
			total += delta
			if resource == "floatingips" || resource == "floatingipranges" || resource == "events" {
				operator += delta
			}
			if delta > 0 {
				breakdown = append(breakdown, fmt.Sprintf("%s %.2f", resource, delta/float64(n)))
			}
		}
		sort.Strings(breakdown)
		b.Logf("N=%d: writes per cluster by resource: %s", n, strings.Join(breakdown, ", "))
		r.teardown(b, rangeName, guests)
	}
	runs := float64(b.N)
	b.ReportMetric(toConverge/runs, "s-to-converge")
	b.ReportMetric(toCreate/runs, "s-to-create")
	b.ReportMetric(afterCreated/runs, "s-after-last-created")
	b.ReportMetric(total/runs/float64(n), "writes/cluster")
	b.ReportMetric(operator/runs/float64(n), "operator-writes/cluster")
}

// waitConverged waits until every guest's FloatingIP holds an address, as the watch shows them,
// and returns when the last FloatingIP was created and when the last address was held.
func waitConverged(b *testing.B, fips kubefipcontrollers.FloatingIPCache, guests []string, timeout time.Duration) (allExist, done time.Time) {
	deadline := time.Now().Add(timeout)
	for {
		exist, held := 0, 0
		for _, name := range guests {
			if x, err := fips.Get("c-m-"+name, name+"-kubevip"); err == nil {
				exist++
				if allocated(x) {
					held++
				}
			}
		}
		now := time.Now()
		if exist == len(guests) && allExist.IsZero() {
			allExist = now
		}
		if held == len(guests) {
			return allExist, now
		}
		if now.After(deadline) {
			b.Fatalf("after %s: %d of %d FloatingIPs exist, %d hold an address", timeout, exist, len(guests), held)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// allAllocated checks, from the API server itself, that every guest has exactly one FloatingIP,
// holding an address no other guest holds.
func (r *rancher) allAllocated(guests []string) error {
	list, err := r.fips.FloatingIP().List("", metav1.ListOptions{})
	if err != nil {
		return err
	}
	byNamespace := map[string][]v1.FloatingIP{}
	for _, x := range list.Items {
		byNamespace[x.Namespace] = append(byNamespace[x.Namespace], x)
	}
	holder := map[string]string{}
	for _, name := range guests {
		fips := byNamespace["c-m-"+name]
		if len(fips) != 1 || !allocated(&fips[0]) {
			return fmt.Errorf("guest %s has %d FloatingIPs, allocated: %v", name, len(fips), len(fips) == 1 && allocated(&fips[0]))
		}
		if other, dup := holder[fips[0].Status.IPAddress]; dup {
			return fmt.Errorf("%s is held by both %s and %s", fips[0].Status.IPAddress, other, name)
		}
		holder[fips[0].Status.IPAddress] = name
	}
	return nil
}

// teardown deletes the guests' provisioning clusters and waits until the operator deleted their
// FloatingIPs and released every address.
func (r *rancher) teardown(b *testing.B, rangeName string, guests []string) {
	if err := parallel(guests, func(name string) error { return r.prov.Delete(fleetNS, name, nil) }); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		rng, err := r.fips.FloatingIPRange().Get(rangeName, metav1.GetOptions{})
		if err == nil && len(rng.Status.Allocations) == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("range %s still records %d addresses after the clusters were deleted", rangeName, len(rng.Status.Allocations))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (r *rancher) deleteRange(b *testing.B, name string) {
	if err := r.fips.FloatingIPRange().Delete(name, nil); err != nil {
		b.Errorf("deleting range %s: %v", name, err)
	}
}

// loopbackPort returns a loopback port nothing listens on right now.
func loopbackPort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// requestTotal matches one series of the API server's request counter.
var requestTotal = regexp.MustCompile(`^apiserver_request_total\{(.*)\} ([0-9.e+]+)$`)

var labelPair = regexp.MustCompile(`(\w+)="([^"]*)"`)

// apiWrites reads the API server's own count of write requests, by resource.
func (r *rancher) apiWrites(b *testing.B) map[string]float64 {
	raw, err := r.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(bg())
	if err != nil {
		b.Fatalf("reading the API server's metrics: %v", err)
	}
	writes := map[string]float64{}
	scanner := bufio.NewScanner(bytes.NewReader(raw))
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		m := requestTotal.FindStringSubmatch(scanner.Text())
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, pair := range labelPair.FindAllStringSubmatch(m[1], -1) {
			labels[pair[1]] = pair[2]
		}
		switch labels["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY":
			v, _ := strconv.ParseFloat(m[2], 64)
			writes[labels["resource"]] += v
		}
	}
	return writes
}
