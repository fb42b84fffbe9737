package allocation

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

// siteRange is range name with cidr on Harvester cluster harvester, network vlan10.
func siteRange(name, cidr, harvester string, created time.Time) *v1.FloatingIPRange {
	r := rangeOf(name, cidr, created, nil)
	r.Annotations = map[string]string{v1.AnnotationHarvesterClusterName: harvester, v1.AnnotationHarvesterNetworkName: "vlan10"}
	return r
}

// api returns the fake API server behind a benchManager.
func apiOf(m *Manager) *fakes.Allocations { return m.deps.Allocations.(*fakes.Allocations) }

// TestSameAddressInTwoSpaces: two Harvester sites with the same private range each hand out the
// same address once; within one site a second overlapping range is still flagged.
func TestSameAddressInTwoSpaces(t *testing.T) {
	ctx := context.Background()
	old := time.Now().Add(-time.Hour)
	site1 := siteRange("site1", "192.168.10.0/24", "harvester1", old)
	site2 := siteRange("site2", "192.168.10.0/24", "harvester2", old)
	late := siteRange("site1-late", "192.168.10.128/25", "harvester1", time.Now())
	m := benchManager([]*v1.FloatingIPRange{site1, site2, late})

	a1, _, err := m.Claim(ctx, "site1", who("a"), netip.Addr{}, false)
	if err != nil {
		t.Fatal(err)
	}
	a2, _, err := m.Claim(ctx, "site2", who("b"), netip.Addr{}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := netip.MustParseAddr("192.168.10.1")
	if a1 != want || a2 != want {
		t.Fatalf("site 1 got %v, site 2 got %v; want %v at each", a1, a2, want)
	}
	names := map[string]bool{}
	for _, a := range apiOf(m).Objects() {
		name := a.Name
		names[name] = true
		if a.Labels[v1.LabelAddress] != "192.168.10.1" || a.Labels[v1.LabelHarvesterCluster] != a.Spec.Space.HarvesterClusterName {
			t.Errorf("%s is labelled %v", name, a.Labels)
		}
	}
	if !names[v1.AllocationName(v1.SpaceOf(site1), want)] || !names[v1.AllocationName(v1.SpaceOf(site2), want)] || len(names) != 2 {
		t.Errorf("objects %v; want one per site", names)
	}
	// A static request for the address at site 2 by another owner names site 2's holder.
	var taken *ipam.TakenError
	if _, _, err := m.Claim(ctx, "site2", who("c"), want, false); !errors.As(err, &taken) || taken.Holder.UID != fipOwner("b").UID {
		t.Errorf("static request at site 2 = %v; want taken by b", err)
	}
	if sum := m.Summarize(site1); sum.Problem != nil || sum.Used != 1 {
		t.Errorf("site 1: %+v", sum)
	}
	if sum := m.Summarize(site2); sum.Problem != nil || sum.Used != 1 {
		t.Errorf("site 2, the same CIDR as site 1 on another Harvester cluster: %+v", sum)
	}
	sum := m.Summarize(late)
	if sum.Problem == nil || sum.Problem.Reason != v1.ReasonOverlap || !strings.Contains(sum.Problem.Message, "site1") {
		t.Errorf("a second overlapping range on site 1 = %+v; want Overlap naming site1", sum.Problem)
	}
	if _, _, err := m.Claim(ctx, "site1-late", who("d"), netip.Addr{}, false); err == nil {
		t.Error("the overlapping range handed out an address")
	}
}

// TestRetainedAddressGoesBackToItsCluster: a retained address is nobody else's, goes back to the
// next FloatingIP of its cluster, in one update of the same object, and is free once its time is up.
func TestRetainedAddressGoesBackToItsCluster(t *testing.T) {
	ctx := context.Background()
	r := siteRange("site1", "10.9.0.0/29", "harvester1", time.Now().Add(-time.Hour)) // .1-.6
	m := benchManager([]*v1.FloatingIPRange{r})
	cluster := v1.ClusterReference{Namespace: "fleet-default", Name: "demo"}
	first := Claimant{Owner: fipOwner("first"), Cluster: cluster}
	addr, _, err := m.Claim(ctx, "site1", first, netip.MustParseAddr("10.9.0.5"), false)
	if err != nil {
		t.Fatal(err)
	}
	name := v1.AllocationName(v1.SpaceOf(r), addr)
	object := stored(apiOf(m), name).UID

	until := time.Now().Add(time.Hour)
	kept, err := m.Retain(ctx, first.UID, cluster, until)
	if err != nil || len(kept) != 1 || kept[0] != addr {
		t.Fatalf("Retain = %v, %v; want %v", kept, err, addr)
	}
	if again, err := m.Retain(ctx, first.UID, cluster, until); err != nil || len(again) != 0 {
		t.Errorf("a second Retain = %v, %v; want nothing left to retain", again, err)
	}
	a := stored(apiOf(m), name)
	if a.Spec.Retained == nil || a.Spec.Retained.Cluster != cluster || a.Labels[v1.LabelState] != StateRetained || a.Spec.Owner.UID != types.UID(first.UID) {
		t.Fatalf("retained object: %+v %v", a.Spec, a.Labels)
	}
	if sum := m.Summarize(r); sum.Used != 0 || sum.Retained != 1 || sum.Available.Int64() != 5 {
		t.Errorf("summary with one retained address: used %d retained %d available %v", sum.Used, sum.Retained, sum.Available)
	}
	if got := m.HeldBy("site1", first.UID); len(got) != 0 {
		t.Errorf("the FloatingIP that left still holds %v", got)
	}

	// Nobody else gets it: a static request is told for whom it is kept, a dynamic claim passes it.
	var retained *RetainedError
	if _, _, err := m.Claim(ctx, "site1", who("stranger"), addr, false); !errors.As(err, &retained) || retained.Cluster != cluster || retained.Allocation != name {
		t.Errorf("static request for the retained address = %v; want a RetainedError naming %v", err, cluster)
	}
	for i, n := range []string{"x1", "x2", "x3", "x4", "x5"} {
		got, _, err := m.Claim(ctx, "site1", who(n), netip.Addr{}, false)
		if err != nil || got == addr {
			t.Fatalf("dynamic claim %d = %v, %v; the retained %v must be passed", i, got, err, addr)
		}
	}
	if _, _, err := m.Claim(ctx, "site1", who("x6"), netip.Addr{}, false); !errors.Is(err, ipam.ErrExhausted) {
		t.Errorf("with every other address held, a claim = %v; want ErrExhausted", err)
	}
	// Not the FloatingIP that held it last, nor one of another cluster.
	other := Claimant{Owner: fipOwner("other"), Cluster: v1.ClusterReference{Namespace: "fleet-default", Name: "other"}}
	if _, _, err := m.Claim(ctx, "site1", other, netip.Addr{}, false); !errors.Is(err, ipam.ErrExhausted) {
		t.Errorf("a FloatingIP of another cluster = %v; want ErrExhausted", err)
	}
	if p := m.Propose("site1", "c-m-new", "demo-kubevip", cluster, false); p != (Proposal{Range: "site1", Addr: addr, Retained: true}) {
		t.Errorf("proposal to the re-created cluster = %+v; want its retained %v", p, addr)
	}

	// The re-created cluster's FloatingIP takes it back: the same object, now held.
	next := Claimant{Owner: fipOwner("next"), Cluster: cluster}
	got, _, err := m.Claim(ctx, "site1", next, netip.Addr{}, false)
	if err != nil || got != addr {
		t.Fatalf("claim of the re-created cluster = %v, %v; want %v", got, err, addr)
	}
	a = stored(apiOf(m), name)
	if a.UID != object || a.Spec.Retained != nil || a.Spec.Owner.UID != types.UID(next.UID) || a.Labels[v1.LabelState] != StateHeld {
		t.Errorf("taken back: %+v %v; want the same object %s held by next", a.Spec, a.Labels, object)
	}
	if sum := m.Summarize(r); sum.Used != 6 || sum.Retained != 0 {
		t.Errorf("after the take-back: used %d retained %d", sum.Used, sum.Retained)
	}

	// Retained again, with a time already up: the repair releases it.
	if _, err := m.Retain(ctx, next.UID, cluster, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, o := range apiOf(m).Objects() { // keep only the retained one, whose holder needs no FloatingIP
		if o.Name != name {
			m.g.remove(o.Name, "")
		}
	}
	released, expired := m.reap(ctx)
	if len(released) != 0 || len(expired) != 1 || !strings.Contains(expired[0], addr.String()) {
		t.Errorf("reap = %v, %v; want the expired retention of %v", released, expired, addr)
	}
	if stored(apiOf(m), name) != nil {
		t.Error("the allocation of the expired retention still exists")
	}
}

// TestProposeOwnFamily: the two addresses retained for a dual-stack cluster, one of each family in
// one space, go back each to the FloatingIP of its own family; Propose, for a single-stack cluster,
// offers the first retained in the space, with its range, whatever the range asked for.
func TestProposeOwnFamily(t *testing.T) {
	ctx := context.Background()
	old := time.Now().Add(-time.Hour)
	m := benchManager([]*v1.FloatingIPRange{
		siteRange("site-v4", "10.9.0.0/29", "harvester1", old),
		siteRange("site-v6", "fd00:9::/125", "harvester1", old),
	})
	cluster := v1.ClusterReference{Namespace: "fleet-default", Name: "demo"}
	held := map[string]netip.Addr{}
	for _, rng := range []string{"site-v6", "site-v4"} { // the IPv6 one retained first
		c := Claimant{Owner: fipOwner(rng), Cluster: cluster}
		addr, _, err := m.Claim(ctx, rng, c, netip.Addr{}, false)
		if err != nil {
			t.Fatal(err)
		}
		if kept, err := m.Retain(ctx, c.UID, cluster, time.Now().Add(time.Hour)); err != nil || len(kept) != 1 {
			t.Fatalf("Retain in %s = %v, %v", rng, kept, err)
		}
		held[rng] = addr
	}
	for _, rng := range []string{"site-v4", "site-v6"} {
		if p := m.Propose(rng, "c-m-new", "demo-kubevip", cluster, true); p != (Proposal{Range: rng, Addr: held[rng], Retained: true}) {
			t.Errorf("Propose(%s, own family) = %+v; want %s %v", rng, p, rng, held[rng])
		}
	}
	if p := m.Propose("site-v4", "c-m-new", "demo-kubevip", cluster, false); p != (Proposal{Range: "site-v6", Addr: held["site-v6"], Retained: true}) {
		t.Errorf("Propose(site-v4) = %+v; want the first retained, site-v6 %v", p, held["site-v6"])
	}
}

// TestLegacyNamesAreRenamed: an allocation of a release before address spaces, named by its bare
// address, gets a successor named for its range's space before it is deleted: at every step one
// object holds the address, and nobody else can claim it.
func TestLegacyNamesAreRenamed(t *testing.T) {
	ctx := context.Background()
	r := siteRange("site1", "10.9.0.0/29", "harvester1", time.Now().Add(-time.Hour))
	m := benchManager([]*v1.FloatingIPRange{r})
	api := apiOf(m)
	legacy := newAllocation(v1.AddressSpace{}, netip.MustParseAddr("10.9.0.3"), "site1", fipOwner("a"))
	legacy.Name, legacy.Spec.Space = "10.9.0.3", v1.AddressSpace{}
	created, err := api.Create(legacy)
	if err != nil {
		t.Fatal(err)
	}
	m.g.onAdd(created)
	if got, _, err := m.Claim(ctx, "site1", who("b"), netip.MustParseAddr("10.9.0.3"), false); err == nil {
		t.Fatalf("the address a legacy object holds was claimed again: %v", got)
	}
	checks := 0
	beforeCreate(api, func(*v1.FloatingIPAllocation) {
		// The successor's create: the legacy object is still there.
		checks++
		if stored(api, "10.9.0.3") == nil {
			t.Error("the legacy object was deleted before its successor existed")
		}
	})
	renamed := m.migrate(ctx)
	api.Before = nil
	want := v1.AllocationName(v1.SpaceOf(r), netip.MustParseAddr("10.9.0.3"))
	if len(renamed) != 1 || checks != 1 || !strings.Contains(renamed[0], want) {
		t.Fatalf("migrate = %v after %d creates; want 10.9.0.3 renamed %s", renamed, checks, want)
	}
	if stored(api, "10.9.0.3") != nil || stored(api, want) == nil || stored(api, want).Spec.Owner.UID != types.UID(fipOwner("a").UID) {
		t.Fatalf("objects after the migration: %v", api.Objects())
	}
	if held := m.HeldBy("site1", fipOwner("a").UID); len(held) != 1 || held[0] != netip.MustParseAddr("10.9.0.3") {
		t.Errorf("a holds %v after the migration", held)
	}
	if again := m.migrate(ctx); len(again) != 0 {
		t.Errorf("a second migration renamed %v", again)
	}
}

// TestSpaceChangeWaitsUntilEmpty: a range whose annotations name another Harvester cluster while it
// holds addresses keeps them in its former space and hands out nothing new until they are released.
func TestSpaceChangeWaitsUntilEmpty(t *testing.T) {
	ctx := context.Background()
	r := siteRange("site1", "10.9.0.0/29", "harvester1", time.Now().Add(-time.Hour))
	m := benchManager([]*v1.FloatingIPRange{r})
	if _, _, err := m.Claim(ctx, "site1", who("a"), netip.Addr{}, false); err != nil {
		t.Fatal(err)
	}
	moved := r.DeepCopy()
	moved.Annotations[v1.AnnotationHarvesterClusterName] = "harvester2"
	m.deps.Ranges.(*fakes.Ranges).Add(moved)
	m.rangeSeen(moved)

	sum := m.Summarize(moved)
	if sum.Problem == nil || sum.Problem.Reason != v1.ReasonSpaceChangePending || !strings.Contains(sum.Problem.Message, "harvester1/vlan10") || sum.Used != 1 {
		t.Fatalf("after the move: %+v; want SpaceChangePending naming harvester1/vlan10, 1 used", sum)
	}
	var notReady *NotReadyError
	if _, _, err := m.Claim(ctx, "site1", who("b"), netip.Addr{}, false); !errors.As(err, &notReady) {
		t.Fatalf("a claim during the move = %v; want NotReadyError", err)
	}
	if held := m.HeldBy("site1", fipOwner("a").UID); len(held) != 1 {
		t.Fatalf("a lost its address in the move: %v", held)
	}
	if _, err := m.Release(ctx, "site1", fipOwner("a").UID); err != nil {
		t.Fatal(err)
	}
	if sum := m.Summarize(moved); sum.Problem != nil {
		t.Fatalf("once empty the range still has %v", sum.Problem)
	}
	got, _, err := m.Claim(ctx, "site1", who("b"), netip.Addr{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if name := v1.AllocationName(v1.SpaceOf(moved), got); stored(apiOf(m), name) == nil {
		t.Errorf("the claim after the move is not named for harvester2: %v", apiOf(m).Objects())
	}
}

// TestExpiryNeverReleasesATakenBackAddress: the repair judged a retention over, but another replica
// handed the address back to its cluster meanwhile — the same object, updated. The release is
// guarded by the version judged, so the new holder keeps it.
func TestExpiryNeverReleasesATakenBackAddress(t *testing.T) {
	ctx := context.Background()
	r := siteRange("site1", "10.9.0.0/29", "harvester1", time.Now().Add(-time.Hour))
	m := benchManager([]*v1.FloatingIPRange{r})
	cluster := v1.ClusterReference{Namespace: "fleet-default", Name: "demo"}
	addr, _, err := m.Claim(ctx, "site1", Claimant{Owner: fipOwner("first"), Cluster: cluster}, netip.Addr{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Retain(ctx, fipOwner("first").UID, cluster, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	// Another replica takes it back; this process has not seen the update yet.
	name := v1.AllocationName(v1.SpaceOf(r), addr)
	api := apiOf(m)
	a, _ := api.Get(name, metav1.GetOptions{})
	setHolder(a, fipOwner("next"))
	if _, err := api.Update(a); err != nil {
		t.Fatal(err)
	}
	if released, expired := m.reap(ctx); len(released)+len(expired) != 0 {
		t.Fatalf("reap = %v, %v; want nothing released", released, expired)
	}
	if got := stored(api, name); got == nil || got.Spec.Owner.UID != types.UID(fipOwner("next").UID) {
		t.Fatalf("the address taken back was released: %v", got)
	}
}

// TestProposeSkipsRetainedInDeletedRange: an address retained for the cluster is proposed with its
// range while that range lives; once the range is being deleted, the lowest free address of the
// asked range is reserved instead, and the retained one stays held.
func TestProposeSkipsRetainedInDeletedRange(t *testing.T) {
	ctx := context.Background()
	old := time.Now().Add(-time.Hour)
	first, second := siteRange("first", "10.9.0.0/29", "harvester1", old), siteRange("second", "10.9.1.0/29", "harvester1", old)
	m := benchManager([]*v1.FloatingIPRange{first, second})
	cluster := v1.ClusterReference{Namespace: "fleet-default", Name: "demo"}
	c := Claimant{Owner: fipOwner("old"), Cluster: cluster}
	kept, _, err := m.Claim(ctx, "first", c, netip.Addr{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Retain(ctx, c.UID, cluster, time.Now().Add(time.Hour)); err != nil || len(got) != 1 {
		t.Fatalf("Retain = %v, %v", got, err)
	}
	if p := m.Propose("second", "c-m-new", "demo-kubevip", cluster, false); p != (Proposal{Range: "first", Addr: kept, Retained: true}) {
		t.Fatalf("Propose while first lives = %+v; want first %v", p, kept)
	}
	now := metav1.Now()
	first.DeletionTimestamp = &now
	m.deps.Ranges.(*fakes.Ranges).Add(first)
	if p := m.Propose("second", "c-m-new", "demo-kubevip", cluster, false); p != (Proposal{Range: "second", Addr: netip.MustParseAddr("10.9.1.1")}) {
		t.Fatalf("Propose while first is deleted = %+v; want second 10.9.1.1, reserved", p)
	}
	if sum := m.Summarize(first); sum.Retained != 1 {
		t.Errorf("first retains %d addresses; want %v still", sum.Retained, kept)
	}
}
