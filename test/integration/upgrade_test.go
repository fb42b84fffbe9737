package integration

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// upgradeOperatorNamespace holds kube-fip-config, the leader Lease and the Events of both
// releases, as one installation's namespace does across a helm upgrade.
const upgradeOperatorNamespace = "kube-fip-system"

// upgradeNamespaces are the guest clusters' namespaces the FloatingIPs live in.
var upgradeNamespaces = []string{"c-m-upgrade1", "c-m-upgrade2"}

// upgradeRange is one range of the upgrade test, with the capacity its CIDR must report.
type upgradeRange struct {
	name     string
	cidr     string
	space    v1.AddressSpace
	capacity int
	// static are the addresses asked for in spec.ipaddress, besides five dynamic FloatingIPs.
	static []string
}

// upgradeRanges: two Harvester clusters (one VM network name, so that only the cluster tells the
// spaces apart), one IPv4 and one IPv6, and a range without the annotations (the space whose two
// names are empty). Their CIDRs are disjoint, as the previous release, which knew one space only,
// requires.
var upgradeRanges = []upgradeRange{
	{name: "upgrade-one-v4", cidr: "10.71.0.0/27", capacity: 30, static: []string{"10.71.0.20", "10.71.0.25"},
		space: v1.AddressSpace{HarvesterClusterName: "harvester-one", HarvesterNetworkName: "vlan10"}},
	{name: "upgrade-two-v6", cidr: "fd71::/120", capacity: 255, static: []string{"fd71::20", "fd71::a0"},
		space: v1.AddressSpace{HarvesterClusterName: "harvester-two", HarvesterNetworkName: "vlan10"}},
	{name: "upgrade-plain", cidr: "10.72.0.0/28", capacity: 14, static: []string{"10.72.0.9"}},
}

// heldFIP is what a FloatingIP showed before the upgrade.
type heldFIP struct {
	ns, name, rng string
	uid           types.UID
	addr          netip.Addr
	spec, status  string
}

func (h heldFIP) String() string { return fmt.Sprintf("%s/%s (%s in %s)", h.ns, h.name, h.addr, h.rng) }

// TestUpgradeFromPreviousReleaseKeepsEveryAddress: upgrade from the previous release, which named
// FloatingIPAllocations by the bare address, on the same API server. Every address is kept, with 0
// duplicates, no window in which an address is free, and the range counts are right:
//
//   - The previous release (built from the repository's history) runs on an API server of its own
//     with that release's CRDs and Rancher's, and hands out ~20 addresses, static and dynamic, in
//     an IPv4 and an IPv6 range of two Harvester clusters and a range without the annotations.
//   - It is stopped (SIGTERM). Then, as a release before allocation objects left them, two ranges
//     get a legacy status.allocations record for a FloatingIP no allocation object holds: one that
//     shows its address in spec and status, and one whose status was lost (only the record knows
//     its address, written in compressed IPv6 form). They are written while no operator runs, so
//     that the operator being tested, not the previous release, adopts them.
//   - The new CRDs are applied over the old ones, as an upgrade of the CRD chart does, and the API
//     server is seen to enforce them before the new operator starts: it refuses a bare-name
//     allocation, IPv4 or IPv6.
//   - Watches of allocations and FloatingIPs start before the new operator; it renames every
//     allocation for its space and adopts the legacy records.
//   - Afterwards: every FloatingIP (same UID) shows exactly its address in spec and status;
//     exactly one allocation per (space, address), named for its space and held by the
//     FloatingIP that shows it; no address shown twice in a space; every range Ready with exact
//     counts and an empty legacy record. From the watch, in resourceVersion order: every address
//     held before the upgrade had an allocation object at every moment (each successor was added
//     before its predecessor was deleted), no object ever named another holder, and no
//     FloatingIP ever showed another address.
//   - New FloatingIPs get fresh addresses, and one asking for a migrated address is told it is
//     taken. The watches run on
//     through this, past twice the orphan grace period, and the same holds at the end: no
//     allocation named for its space was deleted and no FloatingIP lost its address.
//
// Both releases run with leader election as the fixtures' operators do; the previous release does
// not release its Lease on SIGTERM, and the new one, with the same identity (the host name), takes
// it over at once, as a restarted pod of the same name would.
func TestUpgradeFromPreviousReleaseKeepsEveryAddress(t *testing.T) {
	shard := shards.Take(t)
	began := time.Now()
	u, oldBinary, newCRDs := newPreviousReleaseWorld(t, upgradeNamespaces...)

	// The previous release hands out the addresses.
	old, _ := u.operatorFrom(oldBinary)
	for _, r := range upgradeRanges {
		u.createRangeIn(r.space, r.name, r.cidr)
	}
	var names []string
	for _, r := range upgradeRanges {
		for i, ip := range r.static {
			names = append(names, u.createFIP(len(names), fmt.Sprintf("%s-static-%d", r.name, i), r.name, ip))
		}
		for i := range 5 {
			names = append(names, u.createFIP(len(names), fmt.Sprintf("%s-dynamic-%d", r.name, i), r.name, ""))
		}
	}
	held := u.waitAllocated(names)
	for _, r := range upgradeRanges {
		u.waitRangeCounts(r, countIn(held, r.name))
	}
	before := u.listAllocations()
	if len(before) != len(held) {
		t.Fatalf("the previous release made %d allocations for %d FloatingIPs", len(before), len(held))
	}
	for _, a := range before {
		if s, ok := v1.ParseAllocationName(a.Name); !ok || s.Space != "" {
			t.Fatalf("the previous release made allocation %s, not named by the bare address: is %s the release before address spaces?", a.Name, controlplane.PreviousRelease)
		}
		h, ok := held[a.Spec.Owner.UID]
		if !ok || v1.AllocationAddressText(h.addr) != a.Name || h.rng != a.Spec.Range {
			t.Fatalf("the previous release's allocation %s (range %s, owner %s/%s) matches no FloatingIP", a.Name, a.Spec.Range, a.Spec.Owner.Namespace, a.Spec.Owner.Name)
		}
	}
	t.Logf("the previous release holds %d addresses in %d ranges (%s after the start)", len(held), len(upgradeRanges), time.Since(began).Round(time.Millisecond))
	if err := old.Stop(20 * time.Second); err != nil {
		t.Fatalf("stopping the previous release: %v", err)
	}

	// Legacy records, as the releases before allocation objects left them, for FloatingIPs that
	// no allocation object holds.
	legacyV4 := u.addLegacy("upgrade-one-v4", "legacy-shown", "10.71.0.29", true, held)
	legacyV6 := u.addLegacy("upgrade-two-v6", "legacy-status-lost", "fd71:0:0::f0", false, held)
	legacy := map[types.UID]heldFIP{legacyV4.uid: legacyV4, legacyV6.uid: legacyV6}

	// The CRD chart is upgraded first; the new schema must be in force before the operator runs.
	u.upgradeCRDs(newCRDs)

	allocWatch := u.watchAllocations()
	fipWatch := u.watchFloatingIPs()
	upgradeStart := time.Now()
	u.operatorFrom(shard.Operator)
	u.waitMigrated(len(held)+len(legacy), 2*time.Minute)
	t.Logf("the new operator renamed and adopted every allocation %s after its start", time.Since(upgradeStart).Round(time.Millisecond))
	final := u.listAllocations()
	allocEvents := allocWatch.caughtUp(t, final)

	everyone := maps.Clone(held)
	maps.Copy(everyone, legacy)
	u.checkState(everyone, nil)
	u.checkAllocationHistory("the upgrade", before, allocEvents, held, legacy, nil)
	for _, r := range upgradeRanges {
		u.waitRangeCounts(r, countIn(everyone, r.name))
	}

	// New FloatingIPs get fresh addresses; one asking for a migrated address is refused.
	fresh := map[string]string{}
	for _, r := range upgradeRanges {
		for i := range 2 {
			name := fmt.Sprintf("%s-fresh-%d", r.name, i)
			fresh[u.createFIP(i, name, r.name, "")] = r.name
		}
	}
	var taken heldFIP
	for _, h := range held {
		if h.name == "upgrade-one-v4-static-0" {
			taken = h
		}
	}
	thief := u.createFIP(1, "upgrade-thief", "upgrade-one-v4", taken.addr.String())
	for key := range fresh {
		ns, name, _ := strings.Cut(key, "/")
		x := u.waitFIPIn(ns, name, time.Minute, "allocated", suite.Allocated)
		addr := netip.MustParseAddr(x.Status.IPAddress)
		for _, h := range everyone {
			if h.rng == x.Status.Range && h.addr == addr {
				t.Errorf("new FloatingIP %s got %s, which %s holds", key, addr, h)
			}
		}
	}
	tns, tname, _ := strings.Cut(thief, "/")
	x := u.waitFIPIn(tns, tname, time.Minute, "IPConflict", reasonIs("IPConflict"))
	if msg := message(x.Status.Conditions, v1.Ready); !strings.Contains(msg, taken.ns+"/"+taken.name) {
		t.Errorf("%s's IPConflict does not name the holder %s: %q", thief, taken, msg)
	}
	// The reaper has looked at every successor, past the orphan grace period, more than once.
	u.waitReapPasses(2)
	after := u.checkState(everyone, fresh)
	if len(after) != len(everyone)+len(fresh) {
		t.Errorf("%d FloatingIPs hold an address at the end, want %d", len(after), len(everyone)+len(fresh))
	}
	for _, r := range upgradeRanges {
		u.waitRangeCounts(r, countIn(everyone, r.name)+2)
	}
	newcomers := map[types.UID]heldFIP{}
	for uid, h := range after {
		if _, ok := everyone[uid]; !ok {
			newcomers[uid] = h
		}
	}
	allocWatch.caughtUp(t, u.listAllocations())
	allocEvents = allocWatch.stop(t)
	u.checkAllocationHistory("the upgrade and the new FloatingIPs", before, allocEvents, held, legacy, newcomers)
	u.checkFloatingIPHistory(fipWatch.stop(t), everyone)
	t.Logf("the upgrade test took %s", time.Since(began).Round(time.Millisecond))
}

// upgradeWorld is a fixture on the upgrade test's own control plane, its operator namespace
// upgradeOperatorNamespace.
type upgradeWorld struct {
	*fixture
	// reported are the findings of checkAllocationHistory so far.
	reported map[string]bool
}

// newPreviousReleaseWorld builds the previous release and starts a control plane of the test's own
// with that release's CRDs, stopped when the test ends, with the operator's namespace and
// namespaces, whose FloatingIPs the world's ranges allow. It returns the world on that control
// plane, the release's binary and the working tree's CRDs, to upgrade to.
func newPreviousReleaseWorld(t *testing.T, namespaces ...string) (u *upgradeWorld, oldBinary string, newCRDs []*apiextv1.CustomResourceDefinition) {
	t.Helper()
	buildStart := time.Now()
	oldBinary, err := controlplane.BuildRelease(controlplane.PreviousRelease)
	rig.Must(t, err)
	t.Logf("previous release %s: %s (ready in %s)", controlplane.PreviousRelease[:12], oldBinary, time.Since(buildStart).Round(time.Millisecond))
	oldCRDs, err := controlplane.ReleaseCRDs(controlplane.PreviousRelease)
	rig.Must(t, err)
	newCRDs, err = controlplane.ChartCRDs()
	rig.Must(t, err)
	env, err := controlplane.StartWithCRDs(oldCRDs)
	rig.Must(t, err)
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the control plane of %s: %v", t.Name(), err)
		}
	})
	plane, err := suite.New(env, shards.Of(t).Operator)
	rig.Must(t, err)
	for _, ns := range append([]string{upgradeOperatorNamespace}, namespaces...) {
		plane.CreateNamespace(t, ns)
	}
	f := &fixture{t: t, ns: upgradeOperatorNamespace, api: plane.Kubefip, shard: plane, extra: namespaces}
	return &upgradeWorld{fixture: f, reported: map[string]bool{}}, oldBinary, newCRDs
}

// upgradeCRDs applies crds over the previous release's, as an upgrade of the CRD chart does, and
// waits until the API server validates allocations with them.
func (u *upgradeWorld) upgradeCRDs(crds []*apiextv1.CustomResourceDefinition) {
	u.t.Helper()
	rig.Must(u.t, controlplane.UpgradeCRDs(u.shard.Env.Config, crds))
	u.waitNewSchema()
}

// createFIP creates a FloatingIP in the i-th of upgradeNamespaces (round robin) and returns
// "namespace/name".
func (u *upgradeWorld) createFIP(i int, name, rangeName, ip string) string {
	u.t.Helper()
	ns := upgradeNamespaces[i%len(upgradeNamespaces)]
	u.createFIPIn(ns, name, rangeName, ip)
	return ns + "/" + name
}

// waitAllocated waits until each FloatingIP of keys ("namespace/name") holds its address, and
// returns them by UID.
func (u *upgradeWorld) waitAllocated(keys []string) map[types.UID]heldFIP {
	u.t.Helper()
	out := map[types.UID]heldFIP{}
	for _, key := range keys {
		ns, name, _ := strings.Cut(key, "/")
		x := u.waitFIPIn(ns, name, 2*time.Minute, "an address", suite.Allocated)
		out[x.UID] = heldOf(x)
	}
	return out
}

func heldOf(x *v1.FloatingIP) heldFIP {
	addr, _ := netip.ParseAddr(x.Status.IPAddress)
	return heldFIP{ns: x.Namespace, name: x.Name, rng: x.Status.Range, uid: x.UID, addr: addr, spec: x.Spec.IPAddress, status: x.Status.IPAddress}
}

// canaryLabel marks the allocations the test makes to observe the reaper: they are no part of
// what the upgrade did.
const canaryLabel = "test.kubefip.k8s.binbash.org/canary"

// waitReapPasses observes n passes of the operator p's reaper, one after the other: each time it
// creates an allocation whose FloatingIP never existed, in a range of its own, and waits until
// the reaper deletes it. The pass that does ran once that allocation was past the grace period,
// so it judged every allocation made before it.
func (u *upgradeWorld) waitReapPasses(n int) {
	u.t.Helper()
	const rangeName = "upgrade-canary"
	u.createRangeIn(v1.AddressSpace{}, rangeName, "10.179.0.0/29")
	for i := range n {
		addr := netip.AddrFrom4([4]byte{10, 179, 0, byte(3 + i)})
		var space v1.AddressSpace
		a := &v1.FloatingIPAllocation{
			ObjectMeta: metav1.ObjectMeta{Name: v1.AllocationName(space, addr), Labels: map[string]string{
				canaryLabel:              "true",
				v1.LabelRange:            v1.RangeLabelValue(rangeName),
				v1.LabelIPFamily:         "IPv4",
				v1.LabelAddress:          v1.AllocationAddressText(addr),
				v1.LabelSpace:            space.Hash(),
				v1.LabelHarvesterCluster: v1.LabelValue(space.HarvesterClusterName),
				v1.LabelHarvesterNetwork: v1.LabelValue(space.HarvesterNetworkName),
				v1.LabelOwnerNamespace:   upgradeNamespaces[0],
				v1.LabelState:            allocation.StateHeld,
			}},
			Spec: v1.FloatingIPAllocationSpec{Address: addr.String(), Range: rangeName, Space: space,
				Owner: v1.FloatingIPReference{Namespace: upgradeNamespaces[0], Name: fmt.Sprintf("never-%d", i), UID: types.UID(fmt.Sprintf("uid-of-never-%d", i))}},
		}
		if _, err := u.api.FloatingIPAllocation().Create(a); err != nil {
			u.t.Fatalf("creating the canary allocation %s: %v", a.Name, err)
		}
		var err error
		if !rig.Within(time.Minute, func() bool {
			_, err = u.api.FloatingIPAllocation().Get(a.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}) {
			u.t.Fatalf("the reaper did not release the canary allocation %s within a minute (%v)", a.Name, err)
		}
	}
}

func countIn(fips map[types.UID]heldFIP, rangeName string) int {
	n := 0
	for _, h := range fips {
		if h.rng == rangeName {
			n++
		}
	}
	return n
}

// waitRangeCounts waits until range r is Ready and counts used addresses, with capacity and
// available right and no legacy record.
func (u *upgradeWorld) waitRangeCounts(r upgradeRange, used int) {
	u.t.Helper()
	what := fmt.Sprintf("Ready, used %d, capacity %d, available %d, no retained and no legacy record", used, r.capacity, r.capacity-used)
	u.waitRange(r.name, 30*time.Second, what, func(x *v1.FloatingIPRange) bool {
		return x != nil && v1.Ready.IsTrue(x) && x.Status.Used == int64(used) && x.Status.Capacity == strconv.Itoa(r.capacity) &&
			x.Status.Available == strconv.Itoa(r.capacity-used) && x.Status.Retained == 0 && len(x.Status.Allocations) == 0
	})
}

func (u *upgradeWorld) listAllocations() []v1.FloatingIPAllocation {
	u.t.Helper()
	list, err := u.api.FloatingIPAllocation().List(metav1.ListOptions{})
	if err != nil {
		u.t.Fatal(err)
	}
	return list.Items
}

// addLegacy creates FloatingIP name in rangeName, held only by an entry of the range's legacy
// status.allocations for addr (spelled as given), and returns it as it must end up. shown: the
// FloatingIP shows the address in spec and status, as those releases left it; otherwise it asks
// for no address and has no status, as after a restore that lost it, and only the record knows.
func (u *upgradeWorld) addLegacy(rangeName, name, addr string, shown bool, held map[types.UID]heldFIP) heldFIP {
	u.t.Helper()
	want := netip.MustParseAddr(addr)
	for _, h := range held {
		if h.rng == rangeName && h.addr == want {
			u.t.Fatalf("the legacy address %s is held by %s", addr, h)
		}
	}
	spec := ""
	if shown {
		spec = want.String()
	}
	ns, _, _ := strings.Cut(u.createFIP(0, name, rangeName, spec), "/")
	x := u.getFIPIn(ns, name)
	if shown {
		x.Status.IPAddress, x.Status.Range = want.String(), rangeName
		_, err := u.api.FloatingIP().UpdateStatus(x)
		rig.Must(u.t, err)
	}
	r := u.getRange(rangeName)
	if len(r.Status.Allocations) != 0 {
		u.t.Fatalf("range %s already has a legacy record: %v", rangeName, r.Status.Allocations)
	}
	r.Status.Allocations = map[string]v1.Allocation{addr: {Namespace: ns, Name: name, UID: x.UID}}
	_, err := u.api.FloatingIPRange().UpdateStatus(r)
	rig.Must(u.t, err)
	return heldFIP{ns: ns, name: name, rng: rangeName, uid: x.UID, addr: want, spec: want.String(), status: want.String()}
}

var allocationGVR = schema.GroupVersionResource{Group: "kubefip.k8s.binbash.org", Version: "v1", Resource: "floatingipallocations"}

// waitNewSchema waits until the API server validates allocations with the new CRD: a dry run of
// an allocation named for its space is taken, and those of a bare name, IPv4 and IPv6, as the
// releases before address spaces named them, are refused.
func (u *upgradeWorld) waitNewSchema() {
	u.t.Helper()
	r := upgradeRanges[0]
	dry := func(name string, addr netip.Addr, space *v1.AddressSpace) error {
		spec := map[string]interface{}{
			"address": addr.String(), "range": r.name,
			"owner": map[string]interface{}{"namespace": upgradeNamespaces[0], "name": "probe", "uid": "uid-of-a-probe"},
		}
		if space != nil {
			spec["space"] = map[string]interface{}{"harvesterClusterName": space.HarvesterClusterName, "harvesterNetworkName": space.HarvesterNetworkName}
		}
		obj := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "kubefip.k8s.binbash.org/v1", "kind": "FloatingIPAllocation",
			"metadata": map[string]interface{}{"name": name}, "spec": spec,
		}}
		_, err := dynamic.NewForConfigOrDie(u.shard.Env.Config).Resource(allocationGVR).Create(context.Background(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	v4, v6 := netip.MustParseAddr("10.71.0.30"), netip.MustParseAddr("fd71::fe")
	var newErr, v4Err, v6Err error
	if !rig.Within(30*time.Second, func() bool {
		newErr = dry(v1.AllocationName(r.space, v4), v4, &r.space)
		v4Err, v6Err = dry(v1.AllocationAddressText(v4), v4, nil), dry(v1.AllocationAddressText(v6), v6, nil)
		return newErr == nil && apierrors.IsInvalid(v4Err) && apierrors.IsInvalid(v6Err)
	}) {
		u.t.Fatalf("the new CRD is not in force 30s after the upgrade: an allocation named for its space: %v; bare-name ones: %v, %v (want refused as invalid)", newErr, v4Err, v6Err)
	}
}

// event is one watch event as it arrived.
type event struct {
	typ watch.EventType
	rv  uint64
	obj runtime.Object
}

// recorder keeps every event of a watch from resourceVersion from on, re-watching from the last
// resourceVersion if the API server ends it.
type recorder struct {
	from   string
	mu     sync.Mutex
	events []event
	err    error
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once
}

func newRecorder(t *testing.T, rv string, open func(rv string) (watch.Interface, error)) *recorder {
	t.Helper()
	w, err := open(rv)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{from: rv, quit: make(chan struct{}), done: make(chan struct{})}
	// A guest API server with a watch still open stops slowly.
	t.Cleanup(r.end)
	go func() {
		defer close(r.done)
		defer func() { w.Stop() }()
		for {
			var ev watch.Event
			var more bool
			select {
			case <-r.quit:
				return
			case ev, more = <-w.ResultChan():
			}
			if !more {
				// The API server ended the watch (its timeout): go on from the last event seen.
				if w, err = open(rv); err != nil {
					r.fail(fmt.Errorf("watching again from %s: %w", rv, err))
					w = watch.NewEmptyWatch()
					return
				}
				continue
			}
			switch ev.Type {
			case watch.Bookmark:
				continue
			case watch.Error:
				r.fail(fmt.Errorf("watch error: %v", apierrors.FromObject(ev.Object)))
				return
			}
			m, ok := ev.Object.(metav1.Object)
			if !ok {
				r.fail(fmt.Errorf("watch event of %T", ev.Object))
				return
			}
			n, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
			if err != nil {
				r.fail(fmt.Errorf("resourceVersion %q: %w", m.GetResourceVersion(), err))
				return
			}
			rv = m.GetResourceVersion()
			r.mu.Lock()
			r.events = append(r.events, event{typ: ev.Type, rv: n, obj: ev.Object.DeepCopyObject()})
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// end ends the watch, once.
func (r *recorder) end() {
	r.once.Do(func() { close(r.quit) })
	<-r.done
}

func (r *recorder) snapshot() ([]event, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event(nil), r.events...), r.err
}

// stop ends the watch and returns its events, failing the test if it broke or they are out of
// resourceVersion order.
func (r *recorder) stop(t *testing.T) []event {
	t.Helper()
	r.end()
	events, err := r.snapshot()
	if err != nil {
		t.Fatalf("the watch broke, so the upgrade cannot be followed: %v", err)
	}
	inOrder(t, events)
	return events
}

// inOrder fails the test unless events are in increasing resourceVersion order, as one watch
// delivers them.
func inOrder(t *testing.T, events []event) {
	t.Helper()
	for i := 1; i < len(events); i++ {
		if events[i].rv <= events[i-1].rv {
			t.Fatalf("watch events out of resourceVersion order: %d after %d", events[i].rv, events[i-1].rv)
		}
	}
}

// allocationRecorder follows the allocations from a list.
type allocationRecorder struct {
	*recorder
	initial []v1.FloatingIPAllocation
}

func (u *upgradeWorld) watchAllocations() *allocationRecorder {
	u.t.Helper()
	list, err := u.api.FloatingIPAllocation().List(metav1.ListOptions{})
	if err != nil {
		u.t.Fatal(err)
	}
	r := newRecorder(u.t, list.ResourceVersion, func(rv string) (watch.Interface, error) {
		return u.api.FloatingIPAllocation().Watch(metav1.ListOptions{ResourceVersion: rv})
	})
	return &allocationRecorder{recorder: r, initial: list.Items}
}

// caughtUp waits until the watch has brought the initial list to final (same names and UIDs), so
// that no event up to final is missing, and returns its events so far, in resourceVersion order.
func (a *allocationRecorder) caughtUp(t *testing.T, final []v1.FloatingIPAllocation) []event {
	t.Helper()
	want := map[string]types.UID{}
	for _, x := range final {
		want[x.Name] = x.UID
	}
	var live map[string]types.UID
	caughtUp := rig.Within(30*time.Second, func() bool {
		events, _ := a.snapshot()
		live = map[string]types.UID{}
		for _, x := range a.initial {
			live[x.Name] = x.UID
		}
		for _, e := range events {
			x := e.obj.(*v1.FloatingIPAllocation)
			if e.typ == watch.Deleted {
				delete(live, x.Name)
			} else {
				live[x.Name] = x.UID
			}
		}
		return fmt.Sprint(live) == fmt.Sprint(want)
	})
	events, err := a.snapshot()
	if err != nil {
		t.Fatalf("the watch broke, so the upgrade cannot be followed: %v", err)
	}
	if !caughtUp {
		t.Fatalf("the allocation watch did not catch up with the API server: it has %v, the API server %v", live, want)
	}
	inOrder(t, events)
	return events
}

func (u *upgradeWorld) watchFloatingIPs() *recorder {
	u.t.Helper()
	list, err := u.api.FloatingIP().List("", metav1.ListOptions{})
	if err != nil {
		u.t.Fatal(err)
	}
	return newRecorder(u.t, list.ResourceVersion, func(rv string) (watch.Interface, error) {
		return u.api.FloatingIP().Watch("", metav1.ListOptions{ResourceVersion: rv})
	})
}

// waitMigrated waits until no allocation has a bare name, want allocations are named for their
// space, and every FloatingIP holds its address.
func (u *upgradeWorld) waitMigrated(want int, timeout time.Duration) {
	u.t.Helper()
	var bare, spaced []string
	var notAllocated []string
	if rig.Within(timeout, func() bool {
		list, err := u.api.FloatingIPAllocation().List(metav1.ListOptions{})
		if err != nil {
			return false
		}
		bare, spaced = nil, nil
		for _, a := range list.Items {
			if s, ok := v1.ParseAllocationName(a.Name); ok && s.Space != "" {
				spaced = append(spaced, a.Name)
			} else {
				bare = append(bare, a.Name)
			}
		}
		fips, err := u.api.FloatingIP().List("", metav1.ListOptions{})
		if err != nil {
			return false
		}
		notAllocated = nil
		for i := range fips.Items {
			if !suite.Allocated(&fips.Items[i]) {
				notAllocated = append(notAllocated, fips.Items[i].Namespace+"/"+fips.Items[i].Name+": "+suite.StatusText(&fips.Items[i]))
			}
		}
		return len(bare) == 0 && len(spaced) == want && len(notAllocated) == 0
	}) {
		return
	}
	u.t.Fatalf("the upgrade did not finish within %s: %d allocations still named by the bare address %v, %d named for their space (want %d), FloatingIPs not allocated: %v",
		timeout, len(bare), bare, len(spaced), want, notAllocated)
}

// spaceOfRange is the space of one of the upgrade test's ranges.
func spaceOfRange(name string) (v1.AddressSpace, bool) {
	r, ok := rangeNamed(name)
	return r.space, ok
}

// rangeNamed is the upgrade test's range name.
func rangeNamed(name string) (upgradeRange, bool) {
	i := slices.IndexFunc(upgradeRanges, func(r upgradeRange) bool { return r.name == name })
	if i < 0 {
		return upgradeRange{}, false
	}
	return upgradeRanges[i], true
}

// slotKey is "<space hash>/<address>" of an allocation: the space from its name, or for a bare
// name (the previous release's) from its range.
func slotKey(a *v1.FloatingIPAllocation) (string, bool) {
	s, ok := v1.ParseAllocationName(a.Name)
	if !ok {
		return "", false
	}
	hash := s.Space
	if hash == "" {
		space, ok := spaceOfRange(a.Spec.Range)
		if !ok {
			return "", false
		}
		hash = space.Hash()
	}
	return hash + "/" + s.Addr.String(), true
}

func keyOf(h heldFIP) string {
	space, _ := spaceOfRange(h.rng)
	return space.Hash() + "/" + h.addr.String()
}

// checkState checks the FloatingIPs and allocations on the API server now: every FloatingIP of
// kept (by UID) shows exactly its address in spec and status in its range; every FloatingIP of
// fresh ("namespace/name" → range) holds an address of its range; exactly one allocation per
// (space, address), named for the space, its spec right and held by the FloatingIP that shows the
// address; no address shown by two FloatingIPs of a space and no allocation left over. It returns
// the FloatingIPs holding an address, by UID.
func (u *upgradeWorld) checkState(kept map[types.UID]heldFIP, fresh map[string]string) map[types.UID]heldFIP {
	u.t.Helper()
	t := u.t
	fips, err := u.api.FloatingIP().List("", metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	showing := map[string][]heldFIP{} // slot key → FloatingIPs showing it
	holding := map[types.UID]heldFIP{}
	seen := map[types.UID]bool{}
	for i := range fips.Items {
		x := &fips.Items[i]
		key := x.Namespace + "/" + x.Name
		h := heldOf(x)
		seen[x.UID] = true
		if want, ok := kept[x.UID]; ok {
			if x.Spec.IPAddress != want.spec || x.Status.IPAddress != want.status || x.Status.Range != want.rng {
				t.Errorf("FloatingIP %s shows spec %q, status %q in %q after the upgrade; it held %s (spec %q, status %q)",
					key, x.Spec.IPAddress, x.Status.IPAddress, x.Status.Range, want, want.spec, want.status)
			}
			if !v1.Allocated.IsTrue(x) {
				t.Errorf("FloatingIP %s is not Allocated after the upgrade: %s", key, suite.StatusText(x))
			}
		} else if rng, ok := fresh[key]; ok {
			r, _ := rangeNamed(rng)
			pfx := netip.MustParsePrefix(r.cidr)
			if !suite.Allocated(x) || x.Status.Range != rng || !pfx.Contains(h.addr) {
				t.Errorf("new FloatingIP %s: %s, want an address of %s", key, suite.StatusText(x), rng)
			}
		} else if x.Name != "upgrade-thief" {
			t.Errorf("unexpected FloatingIP %s (uid %s)", key, x.UID)
		}
		if x.Status.IPAddress != "" {
			if x.Name == "upgrade-thief" {
				t.Errorf("FloatingIP %s took %s", key, x.Status.IPAddress)
			}
			holding[x.UID] = h
			showing[keyOf(h)] = append(showing[keyOf(h)], h)
		}
	}
	for uid, h := range kept {
		if !seen[uid] {
			t.Errorf("FloatingIP %s (uid %s) is gone after the upgrade", h, uid)
		}
	}
	for key, hs := range showing {
		if len(hs) > 1 {
			t.Errorf("duplicate: %d FloatingIPs show %s: %v", len(hs), key, hs)
		}
	}

	allocs := u.listAllocations()
	bySlot := map[string][]v1.FloatingIPAllocation{}
	for _, a := range allocs {
		s, ok := v1.ParseAllocationName(a.Name)
		if !ok || s.Space == "" {
			t.Errorf("allocation %s is not named for an address space", a.Name)
			continue
		}
		key, _ := slotKey(&a)
		bySlot[key] = append(bySlot[key], a)
		space, ok := spaceOfRange(a.Spec.Range)
		switch {
		case !ok:
			t.Errorf("allocation %s is of unknown range %q", a.Name, a.Spec.Range)
		case a.Name != v1.AllocationName(space, s.Addr) || a.Spec.Space != space || a.Labels[v1.LabelSpace] != space.Hash():
			t.Errorf("allocation %s in range %s (space %s, label %q): want name %s, space %s", a.Name, a.Spec.Range,
				a.Spec.Space, a.Labels[v1.LabelSpace], v1.AllocationName(space, s.Addr), space)
		case netip.MustParseAddr(a.Spec.Address) != s.Addr:
			t.Errorf("allocation %s has spec.address %s", a.Name, a.Spec.Address)
		case a.Spec.Retained != nil:
			t.Errorf("allocation %s is retained: %+v", a.Name, a.Spec.Retained)
		}
		hs := showing[key]
		if len(hs) == 0 {
			t.Errorf("allocation %s (owner %s/%s) holds an address no FloatingIP shows", a.Name, a.Spec.Owner.Namespace, a.Spec.Owner.Name)
			continue
		}
		if h := hs[0]; a.Spec.Owner.UID != h.uid || a.Spec.Owner.Namespace != h.ns || a.Spec.Owner.Name != h.name || a.Spec.Range != h.rng {
			t.Errorf("allocation %s is held by %s/%s (%s) in %s, but %s (%s) shows the address", a.Name,
				a.Spec.Owner.Namespace, a.Spec.Owner.Name, a.Spec.Owner.UID, a.Spec.Range, h, h.uid)
		}
	}
	for key, list := range bySlot {
		if len(list) > 1 {
			t.Errorf("%d allocations hold %s", len(list), key)
		}
	}
	for key, hs := range showing {
		if len(bySlot[key]) == 0 {
			t.Errorf("%s shows %s, which no allocation holds", hs[0], key)
		}
	}
	if len(allocs) != len(holding) {
		t.Errorf("%d allocations for %d FloatingIPs holding an address", len(allocs), len(holding))
	}
	return holding
}

// checkAllocationHistory replays the allocation watch from the list taken before the new operator
// started. After every event, in resourceVersion order, each address held before the upgrade must
// have an allocation object, and no object may name another holder than the FloatingIP that
// held the address (held, legacy, or one of fresh, the FloatingIPs created after the upgrade).
// Each address the previous release held gets its successor before its old object goes; each
// legacy address gets one object and never a bare-name one; no allocation named for its space is
// deleted.
func (u *upgradeWorld) checkAllocationHistory(phase string, initial []v1.FloatingIPAllocation, events []event, held, legacy, fresh map[types.UID]heldFIP) {
	u.t.Helper()
	t := u.t
	// The later phase replays the earlier one's events too: what was reported once is not
	// reported again.
	errorf := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if !u.reported[msg] {
			u.reported[msg] = true
			t.Errorf("%s: %s", phase, msg)
		}
	}
	holder := map[string]types.UID{}
	for _, m := range []map[types.UID]heldFIP{held, legacy, fresh} {
		for uid, h := range m {
			holder[keyOf(h)] = uid
		}
	}
	live := map[string]map[string]bool{} // slot key → names of its live objects
	byName := map[string]string{}        // live object name → slot key
	add := func(a *v1.FloatingIPAllocation) string {
		key, ok := slotKey(a)
		if !ok {
			errorf("allocation %s (range %s) has a name the operator cannot read", a.Name, a.Spec.Range)
			return ""
		}
		if live[key] == nil {
			live[key] = map[string]bool{}
		}
		live[key][a.Name] = true
		byName[a.Name] = key
		return key
	}
	for i := range initial {
		add(&initial[i])
	}
	heldBefore := map[string]bool{}
	for key := range live {
		heldBefore[key] = true
	}
	for uid, h := range held {
		if !heldBefore[keyOf(h)] {
			errorf("before the upgrade, no allocation holds %s of %s (uid %s)", h.addr, h, uid)
		}
	}
	type history struct{ successorAdded, oldDeleted uint64 }
	histories := map[string]*history{}
	freed := map[string]uint64{}
	wrongHolder := map[string]bool{}
	renamed := 0
	for _, e := range events {
		a := e.obj.(*v1.FloatingIPAllocation)
		if a.Labels[canaryLabel] != "" {
			continue
		}
		s, _ := v1.ParseAllocationName(a.Name)
		key, ok := slotKey(a)
		if !ok {
			errorf("event %s of allocation %s at %d: a name the operator cannot read", e.typ, a.Name, e.rv)
			continue
		}
		h := histories[key]
		if h == nil {
			h = &history{}
			histories[key] = h
		}
		switch e.typ {
		case watch.Added, watch.Modified:
			add(a)
			if e.typ == watch.Added && s.Space != "" && h.successorAdded == 0 {
				h.successorAdded = e.rv
			}
			if e.typ == watch.Added && s.Space == "" {
				errorf("a bare-name allocation %s was created (at %d)", a.Name, e.rv)
			}
			if want, ok := holder[key]; !ok {
				errorf("allocation %s of %s/%s was created for an address nobody held (at %d)", a.Name, a.Spec.Owner.Namespace, a.Spec.Owner.Name, e.rv)
			} else if a.Spec.Owner.UID != want && !wrongHolder[key] {
				wrongHolder[key] = true
				errorf("at %d allocation %s names %s/%s (%s), not the FloatingIP that held %s (%s)", e.rv, a.Name,
					a.Spec.Owner.Namespace, a.Spec.Owner.Name, a.Spec.Owner.UID, key, want)
			}
		case watch.Deleted:
			delete(live[key], a.Name)
			delete(byName, a.Name)
			if s.Space == "" {
				h.oldDeleted = e.rv
				renamed++
			} else {
				errorf("allocation %s was deleted (at %d)", a.Name, e.rv)
			}
			if heldBefore[key] && len(live[key]) == 0 && freed[key] == 0 {
				freed[key] = e.rv
			}
		}
	}
	for _, key := range sortedKeysOf(freed) {
		h := histories[key]
		errorf("%s was free from resourceVersion %d: its old object was deleted at %d, its successor added at %d (0: never)",
			key, freed[key], h.oldDeleted, h.successorAdded)
	}
	for uid, h := range held {
		key := keyOf(h)
		x := histories[key]
		switch {
		case x == nil || x.successorAdded == 0:
			errorf("%s (uid %s): no successor of its allocation was added", h, uid)
		case x.oldDeleted == 0:
			errorf("%s (uid %s): its bare-name allocation was never deleted", h, uid)
		case x.successorAdded >= x.oldDeleted:
			errorf("%s (uid %s): the bare-name allocation was deleted at %d, before its successor was added at %d", h, uid, x.oldDeleted, x.successorAdded)
		}
	}
	for uid, h := range legacy {
		if x := histories[keyOf(h)]; x == nil || x.successorAdded == 0 {
			errorf("legacy %s (uid %s): no allocation was added for its record", h, uid)
		}
	}
	for key, names := range live {
		if len(names) > 1 {
			errorf("at the end %s has %d allocations: %v", key, len(names), sortedKeysOf(names))
		}
	}
	t.Logf("allocation watch over %s: %d events; %d bare-name allocations replaced", phase, len(events), renamed)
}

// checkFloatingIPHistory: during the upgrade no FloatingIP was deleted or showed another address
// than its own (one whose status was lost shows none until its record is adopted), and no spec
// changed.
func (u *upgradeWorld) checkFloatingIPHistory(events []event, kept map[types.UID]heldFIP) {
	u.t.Helper()
	t := u.t
	reported := map[types.UID]bool{}
	for _, e := range events {
		x := e.obj.(*v1.FloatingIP)
		want, ok := kept[x.UID]
		if !ok || reported[x.UID] {
			continue
		}
		switch {
		case e.typ == watch.Deleted:
			t.Errorf("FloatingIP %s was deleted during the upgrade (at %d)", want, e.rv)
		case x.Status.IPAddress != want.status && x.Status.IPAddress != "":
			t.Errorf("at %d FloatingIP %s showed %q", e.rv, want, x.Status.IPAddress)
		case x.Status.IPAddress == "" && heldOnceShown(want, events, e.rv):
			t.Errorf("at %d FloatingIP %s showed no address", e.rv, want)
		case x.Spec.IPAddress != want.spec && x.Spec.IPAddress != "":
			t.Errorf("at %d FloatingIP %s asked for %q", e.rv, want, x.Spec.IPAddress)
		default:
			continue
		}
		reported[x.UID] = true
	}
	t.Logf("FloatingIP watch: %d events", len(events))
}

// heldOnceShown: FloatingIP h showed its address in an event before rv (or before the watch, for
// every FloatingIP but the one whose status was lost), so showing none at rv is a gap.
func heldOnceShown(h heldFIP, events []event, rv uint64) bool {
	if h.name != "legacy-status-lost" {
		return true
	}
	for _, e := range events {
		if e.rv >= rv {
			break
		}
		if x := e.obj.(*v1.FloatingIP); x.UID == h.uid && x.Status.IPAddress != "" {
			return true
		}
	}
	return false
}

func sortedKeysOf[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
