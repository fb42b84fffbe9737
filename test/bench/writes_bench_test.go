package bench

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
)

// BenchmarkWritesAlone is the floor BenchmarkStartup is held against: the same world
// (N complete guest clusters and their range, no operator running), and then, with no operator,
// only the three writes a FloatingIP needs — its creation as discovery creates it, the creation
// of the FloatingIPAllocation that holds its address, and the status write that shows the
// address — done by 16 writers at once, as fast as the API server takes them. The objects are
// the ones the operator writes (names, labels, annotations, spec, status conditions), but for the
// FloatingIP's finalizer, left out so that the operator started afterwards can tidy up: a
// finalizer's few bytes change nothing in a write's cost.
//
//	s-writes-alone   first write → last status written
//	cpu-s-machine    the whole machine's CPU seconds in that time
//	machine-busy     the share of the machine's CPUs busy in that time
//
// and the requests per cluster the API server counted (writes/cluster: 3 and the API server's
// own). Afterwards an operator is started, adopts what was written as its own (it must: the
// objects are consistent), and deletes it all with the guests.
func BenchmarkWritesAlone(b *testing.B) {
	r := shared.Rancher(b)
	// The start-up benchmark's watch of FloatingIPs, so that the API server serves the same
	// watchers in both.
	_ = watchFloatingIPs(b)
	for _, size := range []struct {
		n    int
		cidr string
	}{{1000, "10.187.0.0/16"}, {2000, "10.188.0.0/16"}} {
		b.Run(fmt.Sprintf("N=%d", size.n), func(b *testing.B) {
			b.StopTimer()
			c := newConvergence(size.n)
			for iter := 0; iter < b.N; iter++ {
				writesAloneRun(b, r, c, fmt.Sprintf("writes%d-%d", size.n, iter), size.n, size.cidr)
			}
			c.report(b)
		})
	}
}

func writesAloneRun(b *testing.B, r *rancher.World, c *convergence, prefix string, n int, cidr string) {
	ns, rangeName, guests := startupWorld(b, r, prefix, n, cidr)
	rng, err := r.FIPs.FloatingIPRange().Get(rangeName, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	space := v1.SpaceOf(rng)
	first := netip.MustParsePrefix(cidr).Addr().Next()
	addrs := map[string]netip.Addr{}
	next := first
	for _, name := range guests.names {
		addrs[name] = next
		next = next.Next()
	}

	before := apiRequests(b, r)
	machineBefore, _, err := machineCPU()
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var lastWrite time.Time
	b.StartTimer()
	start := time.Now()
	err = rig.Parallel(guests.names, func(name string) error {
		if err := threeWrites(r, guests.byName[name], rangeName, space, addrs[name]); err != nil {
			return err
		}
		mu.Lock()
		lastWrite = time.Now()
		mu.Unlock()
		return nil
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	c.time("s-writes-alone", lastWrite.Sub(start))
	machine, cpus, err := machineCPU()
	if err != nil {
		b.Fatal(err)
	}
	busy := (machine - machineBefore).Seconds() / (float64(cpus) * time.Since(start).Seconds())
	c.time("cpu-s-machine", machine-machineBefore)
	c.seconds["machine-busy"] += busy
	fmt.Printf("%s: %d × 3 writes in %.1f s, machine CPU %.1f s (%.0f%% busy)\n", b.Name(), n, lastWrite.Sub(start).Seconds(), (machine - machineBefore).Seconds(), 100*busy)
	after := apiRequests(b, r)
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			c.requests[k] += d
		}
	}
	c.runs++
	if err := allAllocated(r, guests.names); err != nil {
		b.Fatal(err)
	}

	p := startBenchOperator(b, ns, nil)
	defer func(p *controlplane.Process) { _ = p.Stop(30 * time.Second) }(p)
	if err := p.WaitForLog(b.Context(), "controllers running", 5*time.Minute); err != nil {
		b.Fatal(err)
	}
	teardown(b, r, rangeName, guests)
	deleteRangeAndWait(b, r, rangeName)
}

// threeWrites creates guest g's FloatingIP as discovery does, claims addr for it as the
// allocation manager does, and shows the address in its status as the FloatingIP controller does.
func threeWrites(r *rancher.World, g rancher.Guest, rangeName string, space v1.AddressSpace, addr netip.Addr) error {
	fip, err := r.FIPs.FloatingIP().Create(&v1.FloatingIP{
		ObjectMeta: metav1.ObjectMeta{
			Name:      g.Name + "-kubevip",
			Namespace: g.ID,
			Annotations: map[string]string{
				v1.AnnotationClusterName:         g.Name,
				v1.AnnotationFloatingIPRange:     rangeName,
				v1.AnnotationUpdateConfigMap:     "true",
				v1.AnnotationProvisioningCluster: rancher.FleetNamespace + "/" + g.Name,
				v1.AnnotationProposedAddress:     addr.String(),
			},
		},
		Spec: v1.FloatingIPSpec{IPAddress: addr.String()},
	})
	if err != nil {
		return fmt.Errorf("creating the FloatingIP of %s: %w", g.Name, err)
	}
	_, err = r.FIPs.FloatingIPAllocation().Create(&v1.FloatingIPAllocation{
		ObjectMeta: metav1.ObjectMeta{
			Name: v1.AllocationName(space, addr),
			Labels: map[string]string{
				v1.LabelRange:            v1.RangeLabelValue(rangeName),
				v1.LabelIPFamily:         "IPv4",
				v1.LabelAddress:          v1.AllocationAddressText(addr),
				v1.LabelSpace:            space.Hash(),
				v1.LabelHarvesterCluster: v1.LabelValue(space.HarvesterClusterName),
				v1.LabelHarvesterNetwork: v1.LabelValue(space.HarvesterNetworkName),
				v1.LabelOwnerNamespace:   fip.Namespace,
				v1.LabelState:            allocation.StateHeld,
			},
		},
		Spec: v1.FloatingIPAllocationSpec{
			Address: addr.String(),
			Range:   rangeName,
			Space:   space,
			Owner:   v1.FloatingIPReference{Namespace: fip.Namespace, Name: fip.Name, UID: fip.UID},
		},
	})
	if err != nil {
		return fmt.Errorf("creating the allocation of %s: %w", g.Name, err)
	}
	fip.Status.ClusterName, fip.Status.ObservedGeneration = g.Name, fip.Generation
	fip.Status.IPAddress, fip.Status.Range = addr.String(), rangeName
	v1.SetCondition(&fip.Status, v1.Allocated, true, v1.ReasonAllocated, fmt.Sprintf("holds %s in FloatingIPRange %s", addr, rangeName))
	v1.SetReady(&fip.Status)
	if _, err := r.FIPs.FloatingIP().UpdateStatus(fip); err != nil {
		return fmt.Errorf("showing the address of %s: %w", g.Name, err)
	}
	return nil
}
