package ipam

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestAllocatorConcurrentAllocateNext(t *testing.T) {
	var al Allocator // the zero value must be usable
	if _, err := al.SetPool("pool", "10.0.0.0/22", nil); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 100
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = make(map[netip.Addr]string)
		errs []error
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				uid := fmt.Sprintf("w%d-%d", w, i)
				a, err := al.AllocateNext("pool", owner(uid))
				if err == nil && i%10 == 0 {
					// Interleave reads and an idempotent repeat with writers.
					_, _, _, _ = al.Stats("pool")
					if again, _ := al.AllocateNext("pool", owner(uid)); again != a {
						err = fmt.Errorf("%s: repeat gave %v, first %v", uid, again, a)
					}
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else if prev, dup := seen[a]; dup {
					errs = append(errs, fmt.Errorf("%v handed to %s and %s", a, prev, uid))
				} else {
					seen[a] = uid
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(seen) != workers*each {
		t.Fatalf("got %d distinct addresses, want %d", len(seen), workers*each)
	}
	// Lowest-first under contention means exactly the first N are taken.
	for i := 1; i <= workers*each; i++ {
		a := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
		if _, ok := seen[a]; !ok {
			t.Fatalf("%v skipped", a)
		}
	}
	p, _ := al.Pool("pool")
	if err := checkInvariants(p); err != nil {
		t.Fatal(err)
	}
}

func TestAllocatorConcurrentMixed(t *testing.T) {
	al := NewAllocator()
	for _, n := range []string{"a", "b"} {
		if _, err := al.SetPool(n, "10.9.0.0/24", nil); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				uid := fmt.Sprintf("%d-%d", w, i%20)
				pool := []string{"a", "b"}[i%2]
				switch i % 5 {
				case 0, 1:
					_, _ = al.AllocateNext(pool, owner(uid))
				case 2:
					if a, err := al.NextFree(pool); err == nil {
						_ = al.Claim(pool, a, owner(uid)) // may lose the race: ErrTaken is fine
					}
				case 3:
					al.ReleaseOwner(uid)
				case 4:
					_ = al.Table()
					_ = al.Dump()
				}
			}
		}()
	}
	wg.Wait()
	for _, n := range al.Names() {
		p, _ := al.Pool(n)
		if err := checkInvariants(p); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
}

func TestAllocatorPools(t *testing.T) {
	al := NewAllocator()
	if _, err := al.SetPool("v4", "10.0.0.0/29", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := al.SetPool("v6", "2001:db8::/64", []string{"2001:db8::1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := al.SetPool("bad", "10.0.0.5/24", nil); !errors.Is(err, ErrHostBitsSet) || !strings.Contains(err.Error(), `"bad"`) {
		t.Errorf("SetPool(bad) = %v", err)
	}
	if got := al.Names(); !slices.Equal(got, []string{"v4", "v6"}) {
		t.Errorf("Names() = %v", got)
	}

	missing := []error{
		al.Claim("nope", addr("10.0.0.1"), owner("a")),
		al.Check("nope", addr("10.0.0.1")),
	}
	_, err := al.AllocateNext("nope", owner("a"))
	missing = append(missing, err)
	_, err = al.NextFree("nope")
	missing = append(missing, err)
	_, err = al.Allocations("nope")
	missing = append(missing, err)
	_, _, _, err = al.Stats("nope")
	missing = append(missing, err)
	for i, err := range missing {
		if !errors.Is(err, ErrPoolNotFound) {
			t.Errorf("call %d on missing pool: %v", i, err)
		}
	}
	if _, ok := al.Release("nope", addr("10.0.0.1")); ok {
		t.Error("Release on missing pool")
	}
	if _, ok := al.Holder("nope", addr("10.0.0.1")); ok {
		t.Error("Holder on missing pool")
	}
	if _, ok := al.AddressOf("nope", "a"); ok {
		t.Error("AddressOf on missing pool")
	}
	if _, ok := al.Pool("nope"); ok {
		t.Error("Pool on missing pool")
	}

	a4, _ := al.AllocateNext("v4", owner("a"))
	a6, _ := al.AllocateNext("v6", owner("a"))
	if a4 != addr("10.0.0.1") || a6 != addr("2001:db8::2") {
		t.Errorf("allocated %v %v", a4, a6)
	}
	if err := al.Claim("v4", addr("10.0.0.6"), owner("b")); err != nil {
		t.Fatal(err)
	}
	if err := al.Check("v4", addr("10.0.0.7")); !errors.Is(err, ErrReserved) {
		t.Errorf("Check = %v", err)
	}
	if o, ok := al.Holder("v4", addr("10.0.0.6")); !ok || o.UID != "b" {
		t.Errorf("Holder = %v %v", o, ok)
	}
	if a, ok := al.AddressOf("v6", "a"); !ok || a != a6 {
		t.Errorf("AddressOf = %v %v", a, ok)
	}
	if nf, _ := al.NextFree("v4"); nf != addr("10.0.0.2") {
		t.Errorf("NextFree = %v", nf)
	}
	capacity, used, avail, err := al.Stats("v4")
	if err != nil || capacity.Int64() != 6 || used != 2 || avail.Int64() != 4 {
		t.Errorf("Stats = %v %d %v %v", capacity, used, avail, err)
	}

	// Shrinking under an allocation is refused through the allocator too.
	orphans, err := al.SetPool("v4", "10.0.0.0/30", nil)
	if !errors.Is(err, ErrWouldOrphan) || len(orphans) != 1 || orphans[0].Addr != addr("10.0.0.6") {
		t.Errorf("SetPool shrink = %v, %v", orphans, err)
	}
	if _, err := al.SetPool("v4", "10.0.0.0/28", nil); err != nil {
		t.Errorf("SetPool grow: %v", err)
	}

	// Snapshots are detached.
	snap, _ := al.Pool("v4")
	snap.ReleaseOwner("b")
	if _, ok := al.Holder("v4", addr("10.0.0.6")); !ok {
		t.Error("changing a snapshot changed the allocator")
	}

	rows := al.ReleaseOwner("a")
	want := []Row{{"v4", a4, owner("a")}, {"v6", a6, owner("a")}}
	if !slices.Equal(rows, want) {
		t.Errorf("ReleaseOwner = %v, want %v", rows, want)
	}
	if o, ok := al.Release("v4", addr("10.0.0.6")); !ok || o.UID != "b" {
		t.Errorf("Release = %v %v", o, ok)
	}
	dropped, ok := al.DeletePool("v6")
	if !ok || len(dropped) != 0 {
		t.Errorf("DeletePool = %v %v", dropped, ok)
	}
	if _, ok := al.DeletePool("v6"); ok {
		t.Error("second DeletePool succeeded")
	}
}

func TestAllocatorConflicts(t *testing.T) {
	al := NewAllocator()
	_, _ = al.SetPool("a", "10.0.0.0/24", []string{"10.0.0.128/25"})
	_, _ = al.SetPool("b", "10.0.0.128/25", nil)
	_, _ = al.SetPool("c", "10.0.1.0/24", nil)
	cand := mustPool(t, "10.0.0.0/23")
	if got := al.Conflicts(cand, ""); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("Conflicts = %v", got)
	}
	if got := al.Conflicts(cand, "b"); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("Conflicts except b = %v", got)
	}
	if got := al.Conflicts(mustPool(t, "10.0.0.192/26"), "b"); got != nil {
		t.Errorf("Conflicts with carved-out range = %v", got)
	}
}

func TestAllocatorTable(t *testing.T) {
	al := NewAllocator()
	_, _ = al.SetPool("public", "203.0.113.0/29", []string{"203.0.113.1"})
	_, _ = al.SetPool("empty", "2001:db8::/64", nil)
	_ = al.Claim("public", addr("203.0.113.5"), Owner{Namespace: "web", Name: "lb", UID: "u-2"})
	_, _ = al.AllocateNext("public", Owner{Name: "cluster-scoped", UID: "u-1"})

	rows := al.Table()
	want := []Row{
		{"public", addr("203.0.113.2"), Owner{Name: "cluster-scoped", UID: "u-1"}},
		{"public", addr("203.0.113.5"), Owner{Namespace: "web", Name: "lb", UID: "u-2"}},
	}
	if !slices.Equal(rows, want) {
		t.Errorf("Table() = %v", rows)
	}
	dump := al.Dump()
	for _, s := range []string{
		"RANGE", "empty", "2001:db8::/64", "18446744073709551615 available",
		"203.0.113.0/29 exclude 203.0.113.1", "2 used, 3 available",
		"203.0.113.5", "web/lb", "u-2", "cluster-scoped",
	} {
		if !strings.Contains(dump, s) {
			t.Errorf("Dump() lacks %q:\n%s", s, dump)
		}
	}
	t.Logf("\n%s", dump)
}
