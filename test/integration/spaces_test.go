package integration

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// TestTwoSitesShareAPrivateRange: two Harvester clusters each have a range of the same private
// CIDR on a network of the same name. Those are two address spaces: a guest of each site gets the
// same lowest address, both ranges are Ready with one address used, and the address has two
// FloatingIPAllocations, one per site, told apart by their labels. Overlap is still a conflict
// within one site: a later range overlapping site 1's is Ready=False (Overlap) and hands out
// nothing.
func TestTwoSitesShareAPrivateRange(t *testing.T) {
	f := newFixture(t, "kube-fip-space-sites")
	r := f.shard.Rancher(t)
	f.operator()

	const cidr, lowest = "198.19.10.0/24", "198.19.10.1"
	const range1, range2, overlapping = "space-site1", "space-site2", "space-site1-zoverlap"
	// Site 1's range is the fixture's own kind (harvester-<namespace>, vlan10, the fixture's
	// namespace allowed), so that a FloatingIP made by hand may ask site 1's ranges.
	site1, site2 := "harvester-"+f.ns, "harv-space-site2"
	f.createRange(range1, cidr)
	f.createRangeFor(range2, cidr, site2, "vlan10")
	for _, name := range []string{range1, range2} {
		f.waitRange(name, 30*time.Second, "Ready=True although the other site has the same CIDR", rangeReady)
	}

	g1 := rancher.Guest{Name: "space-site1-guest", ID: "c-m-spcsite1", Harvester: "c-m-harvspc1", Display: site1, Network: rancher.Network("vlan10")}
	g2 := rancher.Guest{Name: "space-site2-guest", ID: "c-m-spcsite2", Harvester: "c-m-harvspc2", Display: site2, Network: rancher.Network("vlan10")}
	rig.Must(t, r.AddGuest(g1))
	rig.Must(t, r.AddGuest(g2))
	x1 := suite.WaitFIP(t, r.FIPs, g1.ID, g1.Name+"-kubevip", 30*time.Second)
	x2 := suite.WaitFIP(t, r.FIPs, g2.ID, g2.Name+"-kubevip", 30*time.Second)
	for _, c := range []struct {
		x         *v1.FloatingIP
		wantRange string
	}{{x1, range1}, {x2, range2}} {
		if got := c.x.Annotations[v1.AnnotationFloatingIPRange]; got != c.wantRange || c.x.Status.Range != c.wantRange {
			t.Errorf("FloatingIP %s/%s is of range %q (status %q), want its own site's %s", c.x.Namespace, c.x.Name, got, c.x.Status.Range, c.wantRange)
		}
		if c.x.Status.IPAddress != lowest {
			t.Errorf("FloatingIP %s/%s holds %s, want the lowest address %s: the other site's holding it must not matter",
				c.x.Namespace, c.x.Name, c.x.Status.IPAddress, lowest)
		}
	}
	for _, name := range []string{range1, range2} {
		f.waitRange(name, 30*time.Second, "Ready=True with used 1", func(x *v1.FloatingIPRange) bool {
			return rangeReady(x) && x.Status.Used == 1 && x.Status.Retained == 0
		})
	}

	// One allocation per site for the one address, each named for, and labelled with, its space.
	list, err := f.api.FloatingIPAllocation().List(metav1.ListOptions{LabelSelector: v1.LabelAddress + "=" + lowest})
	if err != nil {
		t.Fatal(err)
	}
	byRange := map[string]v1.FloatingIPAllocation{}
	for _, a := range list.Items {
		if a.Spec.Range == range1 || a.Spec.Range == range2 {
			if _, dup := byRange[a.Spec.Range]; dup {
				t.Errorf("range %s has two allocations of %s", a.Spec.Range, lowest)
			}
			byRange[a.Spec.Range] = a
		}
	}
	if len(byRange) != 2 {
		t.Fatalf("%d allocations of %s in the two sites' ranges, want 2 (all with that address: %s)", len(byRange), lowest, allocationNames(list.Items))
	}
	for _, c := range []struct {
		rangeName, site string
		holder          *v1.FloatingIP
	}{{range1, site1, x1}, {range2, site2, x2}} {
		a := byRange[c.rangeName]
		space := v1.SpaceOf(f.getRange(c.rangeName))
		if want := v1.AllocationName(space, netip.MustParseAddr(lowest)); a.Name != want {
			t.Errorf("allocation of %s in %s is named %s, want %s", lowest, c.rangeName, a.Name, want)
		}
		if a.Spec.Space != (v1.AddressSpace{HarvesterClusterName: c.site, HarvesterNetworkName: "vlan10"}) {
			t.Errorf("allocation %s: spec.space %+v, want %s/vlan10", a.Name, a.Spec.Space, c.site)
		}
		if a.Spec.Owner.UID != c.holder.UID || a.Spec.Retained != nil {
			t.Errorf("allocation %s: owner %+v retained %+v, want held by %s/%s (%s)", a.Name, a.Spec.Owner, a.Spec.Retained, c.holder.Namespace, c.holder.Name, c.holder.UID)
		}
		wantLabels := map[string]string{v1.LabelSpace: space.Hash(), v1.LabelHarvesterCluster: v1.LabelValue(c.site),
			v1.LabelHarvesterNetwork: "vlan10", v1.LabelState: allocation.StateHeld, v1.LabelRange: v1.RangeLabelValue(c.rangeName)}
		for k, v := range wantLabels {
			if a.Labels[k] != v {
				t.Errorf("allocation %s: label %s=%q, want %q", a.Name, k, a.Labels[k], v)
			}
		}
	}
	if byRange[range1].Name == byRange[range2].Name {
		t.Errorf("the two sites' allocations share the name %s", byRange[range1].Name)
	}

	// What an administrator types to find site 2's holder of the address.
	selector := v1.LabelAddress + "=" + lowest + "," + v1.LabelHarvesterCluster + "=" + v1.LabelValue(site2)
	list, err = f.api.FloatingIPAllocation().List(metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != byRange[range2].Name || list.Items[0].Spec.Owner.UID != x2.UID {
		t.Errorf("-l %s finds %s, want exactly site 2's %s held by %s/%s", selector, allocationNames(list.Items), byRange[range2].Name, x2.Namespace, x2.Name)
	}

	// Within one site, overlap is still a conflict: the later range is flagged and hands out nothing.
	f.createRange(overlapping, "198.19.10.128/25")
	o := f.waitRange(overlapping, 30*time.Second, "Ready=False, Overlap", rangeReason("Overlap"))
	if c, _ := v1.GetCondition(o.Status.Conditions, v1.Ready); c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, range1) {
		t.Errorf("range %s: Ready %s (%s), want False naming the older %s", overlapping, c.Status, c.Message, range1)
	}
	f.createFIP("space-overlap-fip", overlapping, "")
	x := f.waitFIP("space-overlap-fip", 30*time.Second, "RangeNotReady", reasonIs("RangeNotReady"))
	if x.Status.IPAddress != "" || v1.Allocated.IsTrue(x) {
		t.Errorf("FloatingIP on the overlapping range holds %q", x.Status.IPAddress)
	}
	if held := f.held(overlapping); len(held) != 0 {
		t.Errorf("the overlapping range holds %v", held)
	}
	// The older ranges, site 2's included (its CIDR holds the new one's, in another space), are
	// unaffected.
	for _, name := range []string{range1, range2} {
		if x := f.getRange(name); !rangeReady(x) || x.Status.Used != 1 {
			c, _ := v1.GetCondition(x.Status.Conditions, v1.Ready)
			t.Errorf("range %s after the overlapping range came: Ready %s %s (%s), used %d; want Ready, used 1", name, c.Status, c.Reason, c.Message, x.Status.Used)
		}
	}
}

// TestReCreatedClusterGetsItsAddressBack: with addressRetention set, deleting a guest cluster keeps
// its address in a Retained allocation for the provisioning cluster's namespace/name — counted as
// retained, not used, by the range and its metric, and refused (IPRetained, naming the cluster) to
// a FloatingIP asking for it. A cluster of the same name created again, with a new management
// cluster id and namespace, gets that address back although a lower one is free: the same
// allocation object, now Held by the new FloatingIP. The FloatingIP that asked for it still does
// not get it.
func TestReCreatedClusterGetsItsAddressBack(t *testing.T) {
	f := newFixture(t, "kube-fip-sticky-back")
	r := f.shard.Rancher(t)
	f.operatorConfig(map[string]string{"addressRetention": "1h"})
	p, port := f.operator()

	const rng = "sticky-back"
	f.createRange(rng, "198.19.20.0/28")
	f.waitRange(rng, 30*time.Second, "Ready", rangeReady)
	space := v1.SpaceOf(f.getRange(rng))

	// The lowest address goes to a FloatingIP made by hand, so that the guest's is not the one
	// any newcomer gets; it is freed before the cluster comes back.
	f.createFIP("sticky-low", rng, "")
	low := f.waitFIP("sticky-low", 30*time.Second, "an address", suite.Allocated)

	first := rancher.Guest{Name: "sticky-guest", ID: "c-m-stkback1", Harvester: "c-m-harvstk", Display: "harvester-" + f.ns, Network: rancher.Network("vlan10")}
	rig.Must(t, r.AddGuest(first))
	x1 := suite.WaitFIP(t, r.FIPs, first.ID, first.Name+"-kubevip", 30*time.Second)
	addr := x1.Status.IPAddress
	if addr == low.Status.IPAddress || !netip.MustParseAddr(low.Status.IPAddress).Less(netip.MustParseAddr(addr)) {
		t.Fatalf("the guest holds %s and sticky-low %s; want the guest's above the lowest", addr, low.Status.IPAddress)
	}
	name := v1.AllocationName(space, netip.MustParseAddr(addr))
	held := f.waitAllocation(name, 10*time.Second, "held by "+x1.Name, allocationHeldBy(x1.UID))
	cluster := v1.ClusterReference{Namespace: rancher.FleetNamespace, Name: first.Name}

	// Rancher deletes the cluster: the provisioning cluster, then its management cluster and
	// namespace.
	deleted := time.Now()
	rig.Must(t, r.DeleteCluster(first.Name))
	rig.Eventually(t, 30*time.Second, "the deleted cluster's FloatingIP to be deleted", func() bool {
		_, err := r.FIPs.FloatingIP().Get(first.ID, x1.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	kept := f.waitAllocation(name, 10*time.Second, "retained for "+cluster.Name, allocationRetained)
	if kept.UID != held.UID {
		t.Errorf("allocation %s was replaced (uid %s, was %s); retention keeps the object", name, kept.UID, held.UID)
	}
	if kept.Spec.Retained.Cluster != cluster {
		t.Errorf("allocation %s retained for %+v, want %+v", name, kept.Spec.Retained.Cluster, cluster)
	}
	until := kept.Spec.Retained.Until.Time
	if earliest, latest := deleted.Add(time.Hour-2*time.Second), time.Now().Add(time.Hour+time.Second); until.Before(earliest) || until.After(latest) {
		t.Errorf("allocation %s retained until %s, want an hour after the deletion (%s .. %s)", name, until, earliest, latest)
	}
	if kept.Spec.Owner.UID != x1.UID || kept.Labels[v1.LabelRetainedFor] != first.Name || kept.Spec.Address != addr || kept.Spec.Range != rng {
		t.Errorf("allocation %s: owner %+v, %s=%q, address %s, range %s; want the last holder %s, %q, %s, %s",
			name, kept.Spec.Owner, v1.LabelRetainedFor, kept.Labels[v1.LabelRetainedFor], kept.Spec.Address, kept.Spec.Range, x1.UID, first.Name, addr, rng)
	}
	if err := p.WaitForLog(context.Background(), fmt.Sprintf("%s is retained for a cluster re-created as %s/%s", addr, rancher.FleetNamespace, first.Name), 10*time.Second); err != nil {
		t.Error(err)
	}
	if err := r.Mgmt.Delete(first.ID, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Kube.CoreV1().Namespaces().Delete(context.Background(), first.ID, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// Counted as retained, not used: sticky-low's is the one address used.
	x := f.waitRange(rng, 10*time.Second, "used 1, retained 1", func(x *v1.FloatingIPRange) bool {
		return x != nil && x.Status.Used == 1 && x.Status.Retained == 1
	})
	if x.Status.Available != "12" { // 14 addresses in a /28
		t.Errorf("range %s: available %s, want 12 (capacity %s, one used, one retained)", rng, x.Status.Available, x.Status.Capacity)
	}
	rig.Eventually(t, 10*time.Second, "kubefipoperator_fipranges_retained 1 and _reserved 1 for "+rng, func() bool {
		kept, ok1 := rangeGauge(t, port, "kubefipoperator_fipranges_retained", rng)
		used, ok2 := rangeGauge(t, port, "kubefipoperator_fipranges_reserved", rng)
		return ok1 && ok2 && kept == 1 && used == 1
	})

	// Nobody else gets it by asking for it.
	f.createFIP("sticky-wants-a", rng, addr)
	w := f.waitFIP("sticky-wants-a", 30*time.Second, "Allocated=False, IPRetained", allocatedReason("IPRetained"))
	if msg := message(w.Status.Conditions, v1.Allocated); !strings.Contains(msg, rancher.FleetNamespace+"/"+first.Name) || !strings.Contains(msg, name) {
		t.Errorf("IPRetained message %q names neither the cluster %s/%s nor the allocation %s", msg, rancher.FleetNamespace, first.Name, name)
	}
	if w.Status.IPAddress != "" {
		t.Errorf("sticky-wants-a holds %s", w.Status.IPAddress)
	}

	// The lowest address is free again: a newcomer would get it, not the guest's.
	if err := f.api.FloatingIP().Delete(f.ns, "sticky-low", nil); err != nil {
		t.Fatal(err)
	}
	rig.Eventually(t, 30*time.Second, "sticky-low's address to be released", func() bool {
		_, ok := f.held(rng)[low.Status.IPAddress]
		return !ok
	})

	// Rancher creates a cluster of the same name: a new management cluster id and namespace.
	again := first
	again.ID = "c-m-stkback2"
	parts := r.Steps(again)
	rig.Must(t, parts["namespace"]())
	rig.Must(t, parts["cluster"]())
	x2 := suite.WaitFIP(t, r.FIPs, again.ID, again.Name+"-kubevip", 30*time.Second)
	if x2.Status.IPAddress != addr {
		t.Fatalf("the re-created cluster's FloatingIP holds %s, want its retained %s (the lowest free was %s)", x2.Status.IPAddress, addr, low.Status.IPAddress)
	}
	// Discovery proposed it: created with it, never written again.
	if x2.Annotations[v1.AnnotationProposedAddress] != addr || x2.Generation != 1 {
		t.Errorf("re-created FloatingIP: proposed %q, generation %d; want %s proposed, generation 1", x2.Annotations[v1.AnnotationProposedAddress], x2.Generation, addr)
	}
	back := f.waitAllocation(name, 10*time.Second, "held by the re-created cluster's FloatingIP", allocationHeldBy(x2.UID))
	if back.UID != held.UID {
		t.Errorf("allocation %s is a new object (uid %s, was %s); want it taken back in place", name, back.UID, held.UID)
	}
	if _, ok := back.Labels[v1.LabelRetainedFor]; ok {
		t.Errorf("allocation %s still carries %s", name, v1.LabelRetainedFor)
	}
	f.waitRange(rng, 10*time.Second, "used 1, retained 0", func(x *v1.FloatingIPRange) bool {
		return x != nil && x.Status.Used == 1 && x.Status.Retained == 0
	})
	rig.Eventually(t, 10*time.Second, "kubefipoperator_fipranges_retained 0 for "+rng, func() bool {
		v, ok := rangeGauge(t, port, "kubefipoperator_fipranges_retained", rng)
		return ok && v == 0
	})
	rig.Eventually(t, 10*time.Second, "a FloatingIPCreated Event saying the cluster gets "+addr+" back", func() bool {
		return f.shard.HasEvent(t, rancher.FleetNamespace, again.Name, corev1.EventTypeNormal, v1.ReasonFloatingIPCreated, "gets back "+addr)
	})

	// The FloatingIP that asked for it still does not have it: now another FloatingIP holds it.
	w = f.waitFIP("sticky-wants-a", 30*time.Second, "Allocated=False, IPConflict", allocatedReason("IPConflict"))
	if w.Status.IPAddress != "" || !strings.Contains(message(w.Status.Conditions, v1.Allocated), x2.Name) {
		t.Errorf("sticky-wants-a: ip %q, %s; want none, and the holder %s named", w.Status.IPAddress, suite.StatusText(w), x2.Name)
	}
	f.checkRecord(rng, 1)
}

// TestRetentionEndsAndCanBeCutShort: an address retained for a deleted cluster is released when
// its retention ends, and then goes to whoever asks, another cluster's FloatingIP here. With a
// long retention a FloatingIP asking for the retained one waits (IPRetained), and deleting the
// retained allocation by hand gives it the address at once. (A newcomer handed another address
// meanwhile: TestRetainedAddressGoesBackToItsCluster, pkg/allocation.)
// With addressRetention 0 a deleted cluster's address is released at once and never retained.
func TestRetentionEndsAndCanBeCutShort(t *testing.T) {
	f := newFixture(t, "kube-fip-retain-end")
	r := f.shard.Rancher(t)
	f.operatorConfig(map[string]string{"addressRetention": "5s"})
	p, _ := f.operator()

	const rng = "retain-end"
	f.createRange(rng, "198.19.30.0/28")
	f.waitRange(rng, 30*time.Second, "Ready", rangeReady)
	space := v1.SpaceOf(f.getRange(rng))
	nameOf := func(addr string) string { return v1.AllocationName(space, netip.MustParseAddr(addr)) }
	g := func(name, id string) rancher.Guest {
		return rancher.Guest{Name: name, ID: id, Harvester: "c-m-harvret", Display: "harvester-" + f.ns, Network: rancher.Network("vlan10")}
	}

	// A short retention ends on its own.
	short := g("retain-short", "c-m-retshort")
	rig.Must(t, r.AddGuest(short))
	x := suite.WaitFIP(t, r.FIPs, short.ID, short.Name+"-kubevip", 30*time.Second)
	a := x.Status.IPAddress
	f.waitAllocation(nameOf(a), 10*time.Second, "held by "+x.Name, allocationHeldBy(x.UID))
	deleted := time.Now()
	rig.Must(t, r.DeleteCluster(short.Name))
	kept := f.waitAllocation(nameOf(a), 30*time.Second, "retained for "+short.Name, allocationRetained)
	until := kept.Spec.Retained.Until.Time
	// The end is rounded up to the second the API keeps: never early, at most a second late.
	if until.Before(deleted.Add(5*time.Second)) || until.After(time.Now().Add(6*time.Second)) {
		t.Errorf("retained until %s, want about 5s after the deletion at %s", until, deleted)
	}
	f.waitAllocation(nameOf(a), time.Until(until)+30*time.Second, "released when the retention ended", func(x *v1.FloatingIPAllocation) bool {
		return x == nil || x.UID != kept.UID
	})
	if now := time.Now(); now.Before(until) {
		t.Errorf("%s released at %s, before its retention ended at %s", a, now, until)
	}
	if err := p.WaitForLog(context.Background(), fmt.Sprintf("repair: released %s/%s %s/%s, whose retention ended", rng, a, rancher.FleetNamespace, short.Name), 10*time.Second); err != nil {
		t.Error(err)
	}
	t.Logf("%s retained until %s, released %s after the deletion", a, until.Format(time.RFC3339), time.Since(deleted).Round(time.Millisecond))

	other := g("retain-other", "c-m-retother")
	rig.Must(t, r.AddGuest(other))
	y := suite.WaitFIP(t, r.FIPs, other.ID, other.Name+"-kubevip", 30*time.Second)
	if y.Status.IPAddress != a {
		t.Errorf("another cluster's FloatingIP got %s, want %s, the lowest free once its retention ended", y.Status.IPAddress, a)
	}
	if now := f.waitAllocation(nameOf(a), 10*time.Second, "held by "+y.Name, allocationHeldBy(y.UID)); now.UID == kept.UID {
		t.Errorf("allocation %s of another cluster is the retained object %s", now.Name, kept.UID)
	}

	// A long retention, cut short by deleting the allocation.
	f.setRetention("1h", "1h0m0s")
	long := g("retain-long", "c-m-retlong")
	rig.Must(t, r.AddGuest(long))
	z := suite.WaitFIP(t, r.FIPs, long.ID, long.Name+"-kubevip", 30*time.Second)
	b := z.Status.IPAddress
	f.waitAllocation(nameOf(b), 10*time.Second, "held by "+z.Name, allocationHeldBy(z.UID))
	rig.Must(t, r.DeleteCluster(long.Name))
	keptB := f.waitAllocation(nameOf(b), 30*time.Second, "retained for "+long.Name, allocationRetained)
	if left := time.Until(keptB.Spec.Retained.Until.Time); left < 59*time.Minute {
		t.Errorf("%s retained for %s more, want about an hour", b, left)
	}
	f.createFIP("retain-waiter", rng, b)
	f.waitFIP("retain-waiter", 30*time.Second, "Allocated=False, IPRetained", allocatedReason("IPRetained"))
	start := time.Now()
	uid := keptB.UID
	if err := f.api.FloatingIPAllocation().Delete(keptB.Name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		t.Fatal(err)
	}
	w := f.waitFIP("retain-waiter", quick, b+" once its retained allocation was deleted", suite.Allocated)
	if w.Status.IPAddress != b {
		t.Errorf("retain-waiter holds %s, want %s", w.Status.IPAddress, b)
	}
	t.Logf("retain-waiter got %s %s after the retained allocation was deleted", b, time.Since(start).Round(time.Millisecond))
	if now := f.waitAllocation(nameOf(b), 10*time.Second, "held by retain-waiter", allocationHeldBy(w.UID)); now.UID == keptB.UID {
		t.Errorf("allocation %s is still the retained object", now.Name)
	}

	// Retention off: released at once, never retained.
	f.setRetention("0", "0s")
	off := g("retain-off", "c-m-retoff")
	rig.Must(t, r.AddGuest(off))
	o := suite.WaitFIP(t, r.FIPs, off.ID, off.Name+"-kubevip", 30*time.Second)
	c := o.Status.IPAddress
	f.waitAllocation(nameOf(c), 10*time.Second, "held by "+o.Name, allocationHeldBy(o.UID))
	start = time.Now()
	rig.Must(t, r.DeleteCluster(off.Name))
	rig.Eventually(t, 30*time.Second, "the FloatingIP of "+off.Name+" deleted and "+c+" released", func() bool {
		_, err := r.FIPs.FloatingIP().Get(off.ID, o.Name, metav1.GetOptions{})
		x, aerr := f.api.FloatingIPAllocation().Get(nameOf(c), metav1.GetOptions{})
		if aerr == nil && allocationRetained(x) {
			t.Fatalf("with addressRetention 0, %s was retained: %s", c, allocationText(x, nil))
		}
		return apierrors.IsNotFound(err) && apierrors.IsNotFound(aerr)
	})
	t.Logf("with retention off, %s released %s after the deletion", c, time.Since(start).Round(time.Millisecond))
	if err := p.WaitForLog(context.Background(), fmt.Sprintf("deleted FloatingIP %s/%s of the removed guest cluster; its finalizer releases %s", off.ID, o.Name, c), 10*time.Second); err != nil {
		t.Error(err)
	}
	f.waitRange(rng, 10*time.Second, "used 2, retained 0", func(x *v1.FloatingIPRange) bool {
		return x != nil && x.Status.Used == 2 && x.Status.Retained == 0
	})
}

// allocationHeldBy: the allocation exists and is Held by the FloatingIP uid.
func allocationHeldBy(uid types.UID) func(*v1.FloatingIPAllocation) bool {
	return func(a *v1.FloatingIPAllocation) bool {
		return a != nil && a.Spec.Retained == nil && a.Spec.Owner.UID == uid && a.Labels[v1.LabelState] == allocation.StateHeld
	}
}

// allocationRetained: the allocation exists and is Retained, in its spec and its label.
func allocationRetained(a *v1.FloatingIPAllocation) bool {
	return a != nil && a.Spec.Retained != nil && a.Labels[v1.LabelState] == allocation.StateRetained
}

// allocatedReason: the FloatingIP's Allocated condition is False with reason.
func allocatedReason(reason string) func(*v1.FloatingIP) bool {
	return func(x *v1.FloatingIP) bool {
		c, ok := v1.GetCondition(x.Status.Conditions, v1.Allocated)
		return ok && c.Status == corev1.ConditionFalse && c.Reason == reason
	}
}

func allocationText(a *v1.FloatingIPAllocation, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case a == nil:
		return "none"
	}
	return fmt.Sprintf("uid %s, owner %s/%s (%s), retained %+v, labels %v", a.UID, a.Spec.Owner.Namespace, a.Spec.Owner.Name, a.Spec.Owner.UID, a.Spec.Retained, a.Labels)
}

func allocationNames(items []v1.FloatingIPAllocation) []string {
	out := make([]string, 0, len(items))
	for _, a := range items {
		out = append(out, a.Name+" ("+a.Spec.Range+")")
	}
	return out
}

// rangeGauge reads the range gauge metric of range rangeName from the operator serving metrics on
// port.
func rangeGauge(t *testing.T, port int, metric, rangeName string) (float64, bool) {
	t.Helper()
	_, body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, metric+"{") && strings.Contains(line, `fiprangename="`+rangeName+`"`) {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			return v, err == nil
		}
	}
	return 0, false
}
