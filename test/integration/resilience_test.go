package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

func distinct(t *testing.T, held map[string]string) {
	t.Helper()
	by := map[string]string{}
	for name, addr := range held {
		if other, dup := by[addr]; dup {
			t.Errorf("%s is held by both %s and %s", addr, other, name)
		}
		by[addr] = name
	}
}

// TestTwoOperatorsWithoutLeaderElection: two operator processes, each with its own in-memory
// allocator and no leader election, handle 1,000 FloatingIPs created at once: no address is held
// twice, because the claim is decided by the API server.
func TestTwoOperatorsWithoutLeaderElection(t *testing.T) {
	shards.TakeEarly(t)
	f := newFixture(t, "c-m-twoops")
	a, _ := f.operator("--leader-election=false")
	b, _ := f.operator("--leader-election=false")
	f.createRange("twoops", "10.140.0.0/22") // 1,022 addresses

	const n = 1000
	f.createMany("fip", "twoops", 0, n)
	held := f.waitAllAllocated(n, 5*time.Minute)
	distinct(t, held)
	f.checkRecord("twoops", n)

	// Both really worked: each recorded allocations of its own.
	for name, p := range map[string]interface{ Logs() string }{"first": a, "second": b} {
		if !strings.Contains(p.Logs(), "holds 10.140.0.") {
			t.Errorf("the %s operator recorded no allocation; the test did not exercise two writers", name)
		}
	}
}

// TestRestartKeepsEveryAllocation: an operator stopped and started again with allocations present
// moves nothing.
func TestRestartKeepsEveryAllocation(t *testing.T) {
	f := newFixture(t, "c-m-restart1")
	p, _ := f.operator()
	f.createRange("restart1", "10.141.0.0/26")
	f.createMany("fip", "restart1", 0, 20)
	before := f.waitAllAllocated(20, 60*time.Second)
	rangeBefore := f.held("restart1")

	if err := p.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	f.operator()
	f.createFIP("after", "restart1", "")
	f.waitFIP("after", 30*time.Second, "an address after the restart", suite.Allocated)

	after := f.waitAllAllocated(21, 30*time.Second)
	for name, addr := range before {
		if after[name] != addr {
			t.Errorf("%s moved from %s to %s across the restart", name, addr, after[name])
		}
	}
	rangeAfter := f.held("restart1")
	for addr, a := range rangeBefore {
		if rangeAfter[addr] != a {
			t.Errorf("the allocation of %s changed across the restart: %+v -> %+v", addr, a, rangeAfter[addr])
		}
	}
	distinct(t, after)
	f.checkRecord("restart1", 21)
}

// TestCrashDuringChurn: the operator is killed while FloatingIPs are being created; while it is
// down some allocated FloatingIPs are deleted and new ones created; after the restart every address
// is held at most once, nothing allocated before the crash moved, and the deleted ones were
// released.
func TestCrashDuringChurn(t *testing.T) {
	f := newFixture(t, "c-m-restart2")
	p, _ := f.operator()
	f.createRange("restart2", "10.142.0.0/25")

	done := make(chan struct{})
	go func() {
		defer close(done)
		f.createMany("fip", "restart2", 0, 40)
	}()
	// Kill it in the middle of the burst, as a crash would.
	rig.Within(30*time.Second, func() bool { return countAllocated(f) >= 10 })
	p.Kill()
	<-done

	snapshot := map[string]string{}
	list, err := f.api.FloatingIP().List(f.ns, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range list.Items {
		if suite.Allocated(&x) {
			snapshot[x.Name] = x.Status.IPAddress
		}
	}
	// The scenario is a crash in the middle of the burst: some allocated, some not.
	if len(snapshot) < 10 || len(snapshot) == 40 {
		t.Fatalf("%d of 40 FloatingIPs were allocated at the crash: it did not land mid-burst", len(snapshot))
	}
	t.Logf("%d of 40 FloatingIPs were allocated at the crash", len(snapshot))

	// While it is down: delete five allocated ones (they wait on the finalizer), create five more.
	deleted := map[string]bool{}
	for name := range snapshot {
		if len(deleted) == 5 {
			break
		}
		if err := f.api.FloatingIP().Delete(f.ns, name, nil); err != nil {
			t.Fatal(err)
		}
		deleted[name] = true
	}
	f.createMany("late", "restart2", 0, 5)
	for name := range deleted {
		x := f.getFIP(name)
		if x.DeletionTimestamp == nil {
			t.Fatalf("%s was deleted at once although the operator is down; the finalizer is missing", name)
		}
	}

	f.operator()
	held := f.waitAllAllocated(40, 90*time.Second)
	distinct(t, held)
	for name, addr := range snapshot {
		if deleted[name] {
			if _, still := held[name]; still {
				t.Errorf("%s was deleted but still holds an address", name)
			}
			continue
		}
		if held[name] != addr {
			t.Errorf("%s moved from %s to %s across the crash", name, addr, held[name])
		}
	}
	f.checkRecord("restart2", 40)
}

func countAllocated(f *fixture) int {
	list, err := f.api.FloatingIP().List(f.ns, metav1.ListOptions{})
	if err != nil {
		return 0
	}
	n := 0
	for _, x := range list.Items {
		if suite.Allocated(&x) {
			n++
		}
	}
	return n
}

// TestAdoptionOfExistingObjects: objects written before the operator ran — as the original
// kube-fip-operator left them, addresses in the spec, no record in the range — are adopted without
// changing any address; of two naming the same address, the older keeps it and the later is
// flagged IPConflict and never shows the address.
func TestAdoptionOfExistingObjects(t *testing.T) {
	f := newFixture(t, "c-m-adopt")
	f.createRange("adopt", "10.143.0.0/24")
	f.createFIP("first", "adopt", "10.143.0.50")
	f.createFIP("second", "adopt", "10.143.0.60")
	older := f.createFIP("older", "adopt", "10.143.0.70")
	// creationTimestamp has one-second resolution: make "younger" clearly younger.
	f.shard.WaitPast(t, older.CreationTimestamp)
	f.createFIP("younger", "adopt", "10.143.0.70")

	f.operator()
	for name, addr := range map[string]string{"first": "10.143.0.50", "second": "10.143.0.60", "older": "10.143.0.70"} {
		x := f.waitFIP(name, 30*time.Second, "adopted", suite.Allocated)
		if x.Spec.IPAddress != addr || x.Status.IPAddress != addr {
			t.Errorf("%s was adopted as %s/%s, want %s unchanged", name, x.Spec.IPAddress, x.Status.IPAddress, addr)
		}
	}
	y := f.waitFIP("younger", 30*time.Second, "IPConflict", reasonIs("IPConflict"))
	if y.Status.IPAddress != "" || !strings.Contains(message(y.Status.Conditions, v1.Ready), f.ns+"/older") {
		t.Errorf("the younger duplicate: %s", suite.StatusText(y))
	}
	f.checkRecord("adopt", 3)
}

// TestIPv6Slash64: a /64 allocates from the bottom, skipping the subnet-router anycast address,
// and counts its 2^64-1 addresses exactly.
func TestIPv6Slash64(t *testing.T) {
	f := newFixture(t, "c-m-ipv6")
	f.operator()
	f.createRange("ipv6", "fd00:144::/64")
	f.createMany("fip", "ipv6", 0, 20)
	held := f.waitAllAllocated(20, 60*time.Second)
	distinct(t, held)
	want := map[string]bool{}
	for i := 1; i <= 20; i++ {
		want[fmt.Sprintf("fd00:144::%x", i)] = true
	}
	for name, addr := range held {
		if !want[addr] {
			t.Errorf("%s got %s, not one of the 20 lowest addresses", name, addr)
		}
	}
	f.waitRange("ipv6", 10*time.Second, "exact counts", func(r *v1.FloatingIPRange) bool {
		return r.Status.Capacity == "18446744073709551615" && r.Status.Used == 20 && r.Status.Available == "18446744073709551595"
	})
	f.checkRecord("ipv6", 20)
}
