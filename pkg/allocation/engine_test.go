package allocation

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

// beforeCreate runs fn inside every create of api, before the create decides.
func beforeCreate(api *fakes.Allocations, fn func(*v1.FloatingIPAllocation)) {
	api.Before = func(verb string, a *v1.FloatingIPAllocation) error {
		if verb == "create" {
			fn(a)
		}
		return nil
	}
}

// stored is api's object name, nil when there is none.
func stored(api *fakes.Allocations, name string) *v1.FloatingIPAllocation {
	a, _ := api.Get(name, metav1.GetOptions{})
	return a
}

// nameOf is the allocation name of addr in the space of ranges without annotations, the space of
// every range in these tests unless it says otherwise; at is its slot.
func nameOf(addr string) string {
	return v1.AllocationName(v1.AddressSpace{}, netip.MustParseAddr(addr))
}

func at(addr string) slot {
	return slot{Addr: netip.MustParseAddr(addr), Space: v1.AddressSpace{}.Hash()}
}

// who is the claimant of FloatingIP n, made by hand (no provisioning cluster).
func who(n string) Claimant { return Claimant{Owner: fipOwner(n)} }

func fipOwner(n string) ipam.Owner {
	return ipam.Owner{Namespace: "c-m-" + n, Name: n + "-kubevip", UID: "uid-" + n}
}

func allocationObject(addr, rng string, owner ipam.Owner, object string) *v1.FloatingIPAllocation {
	a := newAllocation(v1.AddressSpace{}, netip.MustParseAddr(addr), rng, owner)
	a.UID = types.UID(object)
	return a
}

func engineWithRange(t *testing.T, name, cidr string, exclude ...string) *engine {
	t.Helper()
	g := newEngine(nil)
	if v := g.setRange(name, cidr, exclude...); v.invalid != nil {
		t.Fatal(v.invalid)
	}
	return g
}

// The engine methods below read the engine for the tests, each in one lock section, as the
// Manager's steps do.

// poolHolders counts the addresses of cidr that rng's pool holds, reservations included; cidr
// must be small enough to walk.
func (g *engine) poolHolders(rng, cidr string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	pfx := netip.MustParsePrefix(cidr)
	for a := pfx.Addr(); pfx.Contains(a); a = a.Next() {
		if _, ok := g.ranges[rng].pool.Holder(a); ok {
			n++
		}
	}
	return n
}

// poolHeld is what rng's pool holds, reservations excluded.
func (g *engine) poolHeld(rng string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ranges[rng].pool.Held()
}

// poolHolder is who holds addr in rng's pool, reservations included.
func (g *engine) poolHolder(rng string, addr netip.Addr) (ipam.Owner, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ranges[rng].pool.Holder(addr)
}

// holderAt is a copy of the index's holder of s, or nil.
func (g *engine) holderAt(s slot) *allocEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e := g.idx.holder(s); e != nil {
		c := *e
		return &c
	}
	return nil
}

// setRange makes the engine know range name with this definition and returns its view.
func (g *engine) setRange(name, cidr string, exclude ...string) rangeView {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := rangeOf(name, cidr, time.Now(), nil, exclude...)
	return g.viewLocked(r, g.stateLocked(r))
}

// TestConcurrentClaimsGetDistinctAddresses: 32 workers in one range all create at the same time —
// the fake API server lets no create finish until every worker is inside one, so a lock held
// across the API call would deadlock — and each gets its own address.
func TestConcurrentClaimsGetDistinctAddresses(t *testing.T) {
	const workers = 32
	g := engineWithRange(t, "r", "10.0.0.0/24")
	api := fakes.NewAllocations()
	var inside sync.WaitGroup
	inside.Add(workers)
	all := make(chan struct{})
	go func() { inside.Wait(); close(all) }()
	beforeCreate(api, func(*v1.FloatingIPAllocation) {
		inside.Done()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			t.Error("not every worker reached the API server together: a lock is held across Create")
		}
	})
	got := make([]netip.Addr, workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			a, err := g.claimLoop(context.Background(), api, "r", who(fmt.Sprint(i)), netip.Addr{}, false)
			if err != nil {
				t.Errorf("worker %d: %v", i, err)
			}
			got[i] = a
		}(i)
	}
	wg.Wait()
	seen := map[netip.Addr]int{}
	for i, a := range got {
		if j, ok := seen[a]; ok {
			t.Fatalf("workers %d and %d both got %v", j, i, a)
		}
		seen[a] = i
	}
	if held, all := g.poolHeld("r"), g.poolHolders("r", "10.0.0.0/24"); len(api.Objects()) != workers || held != workers || all != workers {
		t.Errorf("%d objects, %d confirmed, %d held with reservations; want %d of each", len(api.Objects()), held, all, workers)
	}
	// Claiming again moves nothing and creates nothing.
	again, err := g.claimLoop(context.Background(), api, "r", who("7"), netip.Addr{}, false)
	if err != nil || again != got[7] || len(api.Objects()) != workers {
		t.Errorf("a second claim of worker 7 = %v, %v with %d objects; want %v, no create", again, err, len(api.Objects()), got[7])
	}
}

// TestClaimAlreadyExists: the API server says the name exists. Known other owner: a static claim
// is an IPConflict naming it, a dynamic one takes the next address. Same owner: claimed. Unknown
// holder: ErrHolderUnknown, and nobody is handed the address until its object is seen.
func TestClaimAlreadyExists(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := engineWithRange(t, "r", "10.0.0.0/29") // .1-.6
	api := fakes.NewAllocations()
	other := fipOwner("other")

	// Another replica created .1 for other; this process has not seen it yet.
	if _, err := api.Create(newAllocation(v1.AddressSpace{}, netip.MustParseAddr("10.0.0.1"), "r", other)); err != nil {
		t.Fatal(err)
	}
	if _, err := g.claimLoop(ctx, api, "r", who("a"), netip.MustParseAddr("10.0.0.1"), false); !errors.Is(err, ErrHolderUnknown) {
		t.Fatalf("static claim of an unseen holder's address: %v, want ErrHolderUnknown", err)
	}
	a, err := g.claimLoop(ctx, api, "r", who("b"), netip.Addr{}, false)
	if err != nil || a != netip.MustParseAddr("10.0.0.2") {
		t.Fatalf("dynamic claim next to an unseen holder = %v, %v; want 10.0.0.2", a, err)
	}

	// The informer brings the object: now the holder is named.
	g.onAdd(stored(api, nameOf("10.0.0.1")))
	var taken *ipam.TakenError
	if _, err := g.claimLoop(ctx, api, "r", who("a"), netip.MustParseAddr("10.0.0.1"), false); !errors.As(err, &taken) || taken.Holder.UID != other.UID {
		t.Fatalf("static claim of other's address: %v, want a TakenError naming other", err)
	}
	// A soft proposal of a taken address is replaced.
	if a, err := g.claimLoop(ctx, api, "r", who("c"), netip.MustParseAddr("10.0.0.1"), true); err != nil || a != netip.MustParseAddr("10.0.0.3") {
		t.Fatalf("soft claim of a taken address = %v, %v; want 10.0.0.3", a, err)
	}

	// Another replica claimed .4 for d already: d's own claim finds it and succeeds.
	d := fipOwner("d")
	if _, err := api.Create(newAllocation(v1.AddressSpace{}, netip.MustParseAddr("10.0.0.4"), "r", d)); err != nil {
		t.Fatal(err)
	}
	g.onAdd(stored(api, nameOf("10.0.0.4")))
	if a, err := g.claimLoop(ctx, api, "r", Claimant{Owner: d}, netip.Addr{}, false); err != nil || a != netip.MustParseAddr("10.0.0.4") {
		t.Fatalf("claim of what another replica claimed for the same owner = %v, %v", a, err)
	}

	// Exhaustion: .5 and .6 left.
	for _, n := range []string{"e", "f"} {
		if _, err := g.claimLoop(ctx, api, "r", who(n), netip.Addr{}, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.claimLoop(ctx, api, "r", who("g"), netip.Addr{}, false); !errors.Is(err, ipam.ErrExhausted) {
		t.Fatalf("claim in a full range: %v, want ErrExhausted", err)
	}
	if _, err := g.claimLoop(ctx, api, "nope", who("g"), netip.Addr{}, false); !errors.Is(err, ErrRangeNotFound) {
		t.Fatalf("claim in an unknown range: %v", err)
	}
}

// TestClaimFailureLeavesNothingReserved: an API failure returns the error and frees the pick.
func TestClaimFailureLeavesNothingReserved(t *testing.T) {
	t.Parallel()
	g := engineWithRange(t, "r", "fd00:10::/64")
	api := fakes.NewAllocations()
	api.Before = func(string, *v1.FloatingIPAllocation) error { return apierrors.NewServiceUnavailable("etcd is away") }
	if _, err := g.claimLoop(context.Background(), api, "r", who("a"), netip.Addr{}, false); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("claim during an outage: %v", err)
	}
	// The failed create was of the lowest address, so that is the one reservation to give back.
	if h, ok := g.poolHolder("r", netip.MustParseAddr("fd00:10::1")); ok {
		t.Errorf("after a failed create fd00:10::1 is still held by %v", h)
	}
	api.Before = nil
	a, err := g.claimLoop(context.Background(), api, "r", who("a"), netip.Addr{}, false)
	if err != nil || a != netip.MustParseAddr("fd00:10::1") {
		t.Errorf("claim after the outage = %v, %v", a, err)
	}
	if stored(api, nameOf("fd00:10::1")) == nil {
		t.Errorf("no object named after the IPv6 address: %v", api.Objects())
	}
}

// TestIndexFollowsInformerEvents: repeated and late events, tombstones, re-created names and odd
// objects.
func TestIndexFollowsInformerEvents(t *testing.T) {
	t.Parallel()
	g := engineWithRange(t, "r", "10.0.0.0/24")
	a, b := fipOwner("a"), fipOwner("b")
	first := allocationObject("10.0.0.5", "r", a, "obj-1")

	g.onAdd(first)
	g.onUpdate(first, first) // a resync: nothing changes
	if e := g.holderAt(at("10.0.0.5")); e == nil || e.owner.UID != a.UID || len(g.ownedIn(a.UID)) != 1 {
		t.Fatalf("after add and resync: %+v, %d entries of a", e, len(g.ownedIn(a.UID)))
	}
	// A delete of another object under the same name (an older one) leaves the entry alone.
	g.onDelete(allocationObject("10.0.0.5", "r", a, "obj-0"))
	if g.holderAt(at("10.0.0.5")) == nil {
		t.Fatal("the delete of an older object removed the current one")
	}
	// Deleted and re-created for b while unseen: the new object replaces the entry and the pool.
	g.onUpdate(first, allocationObject("10.0.0.5", "r", b, "obj-2"))
	if h, _ := g.poolHolder("r", netip.MustParseAddr("10.0.0.5")); h.UID != b.UID || len(g.ownedIn(a.UID)) != 0 {
		t.Fatalf("after re-creation the pool holder is %v, a holds %d", h, len(g.ownedIn(a.UID)))
	}
	// A tombstone without the final object removes by name.
	g.onDelete(cache.DeletedFinalStateUnknown{Key: nameOf("10.0.0.5")})
	if _, held := g.poolHolder("r", netip.MustParseAddr("10.0.0.5")); g.holderAt(at("10.0.0.5")) != nil || held {
		t.Fatal("a tombstone did not release the address")
	}
	// A tombstone with the final object removes only that object.
	g.onAdd(allocationObject("10.0.0.6", "r", a, "obj-3"))
	g.onDelete(cache.DeletedFinalStateUnknown{Key: nameOf("10.0.0.6"), Obj: allocationObject("10.0.0.6", "r", a, "obj-9")})
	if g.holderAt(at("10.0.0.6")) == nil {
		t.Fatal("a tombstone of another object removed the entry")
	}

	// Odd objects: a name that is no address is not indexed; a spec that disagrees with the name
	// holds the slot of its name.
	odd := allocationObject("10.0.0.7", "r", a, "obj-4")
	odd.Name = "not-an-address"
	g.onAdd(odd)
	if g.holderAt(at("10.0.0.7")) != nil {
		t.Error("an object whose name is no address was indexed")
	}
	wrongSpace := allocationObject("10.0.0.10", "r", a, "obj-6")
	wrongSpace.Spec.Space = v1.AddressSpace{HarvesterClusterName: "elsewhere"}
	g.onAdd(wrongSpace)
	if g.holderAt(at("10.0.0.10")) == nil {
		t.Error("an object whose spec.space is not its name's must be indexed by its name")
	}
	mismatch := allocationObject("10.0.0.8", "r", b, "obj-5")
	mismatch.Spec.Address = "10.0.0.9"
	g.onAdd(mismatch)
	if g.holderAt(at("10.0.0.8")) == nil || g.holderAt(at("10.0.0.9")) != nil {
		t.Error("a mismatched object must hold the address of its name, not of its spec")
	}
}

// TestRangeRebuild: a range's pool is rebuilt from the index. Allocations outside the new
// definition are orphans; another range's allocation inside it is held as foreign and never
// handed out, so overlapping ranges cannot give one address twice.
func TestRangeRebuild(t *testing.T) {
	t.Parallel()
	g := newEngine(nil)
	g.onAdd(allocationObject("10.0.0.5", "r", fipOwner("a"), "obj-1"))
	g.onAdd(allocationObject("10.0.0.20", "r", fipOwner("b"), "obj-2"))
	g.onAdd(allocationObject("10.0.0.1", "overlap", fipOwner("c"), "obj-3"))

	orphans := g.setRange("r", "10.0.0.0/28", "10.0.0.5").orphans
	if len(orphans) != 2 || orphans[0].Addr != "10.0.0.5" || orphans[0].Why != "excluded" || orphans[1].Addr != "10.0.0.20" || orphans[1].Why != "outside the range" {
		t.Fatalf("orphans = %v; want the excluded 10.0.0.5 and the outside 10.0.0.20", orphans)
	}
	a, err := g.claimLoop(context.Background(), fakes.NewAllocations(), "r", who("d"), netip.Addr{}, false)
	if err != nil || a != netip.MustParseAddr("10.0.0.2") {
		t.Fatalf("first claim = %v, %v; want 10.0.0.2, past the other range's 10.0.0.1", a, err)
	}
	if held := g.poolHeld("r"); held != 2 {
		t.Errorf("held %d; want the foreign 10.0.0.1 and the new 10.0.0.2", held)
	}
	if v := g.setRange("bad", "10.0.0.0/33"); v.invalid == nil {
		t.Error("an invalid range was accepted")
	}
	g.forgetRange("r")
	if _, err := g.claimLoop(context.Background(), fakes.NewAllocations(), "r", who("e"), netip.Addr{}, false); !errors.Is(err, ErrRangeNotFound) {
		t.Errorf("claim in a forgotten range: %v", err)
	}
	if n := len(g.holdersIn("r")); n != 3 {
		t.Errorf("forgetting the range dropped its allocations from the index: %d left", n)
	}
}
