package allocation

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"time"

	"go4.org/netipx"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
	"github.com/kubefip/kube-fip-operator/pkg/status"
)

// ByUIDIndex indexes FloatingIPs by UID, to find the owner of an allocation.
const ByUIDIndex = "kubefip.k8s.binbash.org/floatingip-by-uid"

// DefaultOrphanGracePeriod is how old an allocation whose FloatingIP is gone must be before the
// repair releases it: the informers' lag, and the finalizer's chance to release it first.
const DefaultOrphanGracePeriod = 60 * time.Second

// Deps are the API objects the manager reads and writes.
type Deps struct {
	Allocations kubefipcontrollers.FloatingIPAllocationController
	Ranges      kubefipcontrollers.FloatingIPRangeController
	FloatingIPs kubefipcontrollers.FloatingIPController
	Metrics     *metrics.Metrics
}

// Options tune the manager.
type Options struct {
	// OrphanGracePeriod: see DefaultOrphanGracePeriod.
	OrphanGracePeriod time.Duration
}

// Manager claims and releases addresses. One Manager is shared by the range, FloatingIP and guest
// controllers of one operator process.
type Manager struct {
	deps   Deps
	opts   Options
	g      *engine
	synced cache.InformerSynced
	// ranges finds overlapping ranges; the range informer keeps it current once Register has
	// run (rangesFed). Without it (a Manager in a unit test), it is rebuilt from the cache at each
	// use.
	ranges    *rangeIndex
	rangesFed bool
	// cursors let selection skip the ranges it found full (Choose).
	cursors *cursors
}

// NewManager returns a Manager. Register must be called before the caches start.
func NewManager(d Deps, o Options) *Manager {
	if o.OrphanGracePeriod <= 0 {
		o.OrphanGracePeriod = DefaultOrphanGracePeriod
	}
	m := &Manager{deps: d, opts: o, ranges: newRangeIndex(), cursors: &cursors{at: map[string]cursor{}}}
	m.g = newEngine(m.spaceOfRange)
	return m
}

// spaceOfRange is the space hash of range name as the cache has it; the space of ranges without
// annotations when the range is unknown.
func (m *Manager) spaceOfRange(name string) string {
	if m.deps.Ranges == nil {
		return v1.AddressSpace{}.Hash()
	}
	r, err := m.deps.Ranges.Cache().Get(name)
	if err != nil {
		return v1.AddressSpace{}.Hash()
	}
	return v1.SpaceOf(r).Hash()
}

// OnRangeChanged sets what hears of every range whose allocations changed (to refresh its status
// and wake the FloatingIPs waiting for one of its addresses). It must not block; it is set once,
// before the caches start.
func (m *Manager) OnRangeChanged(fn func(rangeName string)) {
	m.g.setChanged(fn)
}

// Register feeds the index from the allocations' informer and adds the FloatingIP index the
// repair reads. It is called once, before the caches start.
func (m *Manager) Register() error {
	m.deps.FloatingIPs.Cache().AddIndexer(ByUIDIndex, func(f *v1.FloatingIP) ([]string, error) {
		return []string{string(f.UID)}, nil
	})
	reg, err := m.deps.Allocations.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    m.g.onAdd,
		UpdateFunc: m.g.onUpdate,
		DeleteFunc: m.g.onDelete,
	})
	if err != nil {
		return fmt.Errorf("watching FloatingIPAllocations: %w", err)
	}
	if _, err := m.deps.Ranges.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    m.rangeSeen,
		UpdateFunc: func(_, obj interface{}) { m.rangeSeen(obj) },
		DeleteFunc: m.rangeGone,
	}); err != nil {
		return fmt.Errorf("watching FloatingIPRanges: %w", err)
	}
	m.rangesFed = true
	m.synced = reg.HasSynced
	return nil
}

// WaitForIndex waits until the index holds every allocation the informer listed at start.
func (m *Manager) WaitForIndex(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), m.synced)
}

// Claim makes c hold an address of range rangeName: want when valid, else c's address there, the
// address retained there for c's cluster, or the lowest free one. With proposed, want is an
// address Propose proposed to c: the proposal, or the lowest free address when another owner took
// it meanwhile. It returns the address and any other addresses c still holds in that range (the
// old one after a change of address), for the caller to release once its own object records the
// new one. The allocation object exists when Claim returns.
func (m *Manager) Claim(ctx context.Context, rangeName string, c Claimant, want netip.Addr, proposed bool) (netip.Addr, []netip.Addr, error) {
	r, err := m.deps.Ranges.Cache().Get(rangeName)
	if apierrors.IsNotFound(err) {
		return netip.Addr{}, nil, fmt.Errorf("%w: %s", ErrRangeNotFound, rangeName)
	}
	if err != nil {
		return netip.Addr{}, nil, err
	}
	// One engine step reads whether c holds what it asks for, the range's view and the holder of
	// a static request's address; the legacy record and overlaps are added outside the lock.
	check := m.g.checkClaim(r, c, want, proposed)
	holds := check.holds
	if !holds {
		if notReady := m.problemOf(r, check.view); notReady != nil {
			// Holding an address stays valid when the range has a problem; only new claims are
			// refused, and a request for an address someone holds is told who.
			if check.taken != nil {
				return netip.Addr{}, nil, check.taken
			}
			return netip.Addr{}, nil, &NotReadyError{Range: rangeName, Problem: *notReady}
		}
		// The selector judges new addresses only: a change of it, or of the cluster's labels,
		// takes nothing away.
		if !ClusterSelectorOf(r).admits(c) {
			return netip.Addr{}, nil, &NotSelectedError{Range: rangeName, Cluster: c.Cluster}
		}
	}
	start := time.Now()
	addr, err := m.g.claimLoop(ctx, cachedAllocations{m.deps.Allocations}, rangeName, c, want, proposed)
	if err != nil {
		return netip.Addr{}, nil, err
	}
	if m.deps.Metrics != nil && !holds {
		m.deps.Metrics.AllocationClaimSeconds.Observe(time.Since(start).Seconds())
	}
	others := slices.DeleteFunc(m.HeldBy(rangeName, c.UID), func(a netip.Addr) bool { return a == addr })
	return addr, others, nil
}

// Propose picks the address of range rangeName for the FloatingIP namespace/name that is about to
// be created for provisioning cluster cluster, so that it is created with its address in
// spec.ipaddress and needs no write of its own to record it. An address retained for the cluster
// in the range's space comes first, with the range it is held in; else the lowest free address is
// reserved: the reservation keeps other proposals and claims of this process off the address until
// the FloatingIP claims it (Claim, proposed), Withdraw drops it, or it lapses. It proposes nothing
// (the zero Proposal) when the range cannot hand out an address now. With ownFamily, for a FloatingIP of a
// dual-stack guest cluster, which holds an address of each family in one space, a retained address
// is taken back only if it is of the family of rangeName's CIDR, so that each FloatingIP gets back
// the address of its own family and never the one the other FloatingIP is to get.
func (m *Manager) Propose(rangeName, namespace, name string, cluster v1.ClusterReference, ownFamily bool) Proposal {
	r, err := m.deps.Ranges.Cache().Get(rangeName)
	if err != nil || r.DeletionTimestamp != nil {
		return Proposal{}
	}
	// What blocks the range beyond the engine's view, read before the engine's step: the
	// engine decides between a retained address and a new reservation under one lock section,
	// and asks for the ranges whose liveness it needs from the cache, read here between steps.
	blocked := m.problemOf(r, rangeView{outline: m.g.outline(r)}) != nil
	live := map[string]bool{}
	// Each round reads ranges not read before, and a cluster retains few addresses: the engine
	// decides once it asks for none.
	for {
		p, ask := m.g.propose(r, namespace, name, cluster, ownFamily, live, blocked, time.Now())
		if len(ask) == 0 {
			return p
		}
		for _, n := range ask {
			held, err := m.deps.Ranges.Cache().Get(n)
			live[n] = err == nil && held.DeletionTimestamp == nil
		}
	}
}

// Proposal is an address Propose picked: one retained for the cluster in Range, or one of Range
// reserved now. The zero Proposal proposes nothing.
type Proposal struct {
	Range    string
	Addr     netip.Addr
	Retained bool
}

// Withdraw drops the proposal of addr to the FloatingIP namespace/name, whose create failed.
func (m *Manager) Withdraw(rangeName string, addr netip.Addr, namespace, name string) {
	m.g.withdraw(rangeName, addr, proposer(namespace, name))
}

// problemOf is what keeps r from handing out new addresses, or nil: from view, the engine's view
// of r (its definition's error, orphans and addresses of a former space), then r's selector, its
// legacy record's orphans and overlap with an older range of view's outline, read from the range
// index: all of them outside the engine's lock. Given an outline alone, it judges what the engine
// leaves to it (Propose, Choose).
func (m *Manager) problemOf(r *v1.FloatingIPRange, view rangeView) *problem.Problem {
	if view.invalid != nil {
		return &problem.Problem{Reason: v1.ReasonInvalidRange, Message: view.invalid.Error()}
	}
	if sel := ClusterSelectorOf(r); sel.err != nil {
		return &problem.Problem{Reason: v1.ReasonInvalidRange,
			Message: "spec.clusterSelector is not a label selector: " + redact.Shorten(sel.err.Error(), redact.MaxValue)}
	}
	if orphans := slices.Concat(view.orphans, legacyOrphans(r)); len(orphans) > 0 {
		return problem.New(v1.ReasonOrphanedAllocations,
			"spec.iprange %s with its excludes no longer covers allocated addresses %s; nothing was dropped and no new address is handed out until those FloatingIPs are moved or deleted, or the edit is reverted",
			r.Spec.IPRange, DescribeHolders(orphans))
	}
	if view.otherSpaces > 0 {
		return problem.New(v1.ReasonSpaceChangePending,
			"the annotations put this range in address space %s (Harvester cluster/network), but it still holds %d addresses in its former space %s; it moves once they are released, and hands out no new address until then",
			view.space, view.otherSpaces, view.former)
	}
	ranges := m.rangeIndexNow()
	ranges.set(r)
	return overlap(r, ranges.overlapping(r, view.outline))
}

// rangeIndexNow is the range index the informer feeds, or, without it (a Manager in a unit test),
// one built from the cache now.
func (m *Manager) rangeIndexNow() *rangeIndex {
	if m.rangesFed {
		return m.ranges
	}
	ranges := newRangeIndex()
	if all, err := m.deps.Ranges.Cache().List(labels.Everything()); err == nil {
		for _, o := range all {
			ranges.set(o)
		}
	}
	return ranges
}

// legacyOrphans are the entries of r's legacy record no allocation object could be made of.
func legacyOrphans(r *v1.FloatingIPRange) []Orphan {
	var out []Orphan
	for _, key := range indexRecord(r.Status.Allocations).unreadable {
		out = append(out, Orphan{Addr: redact.Shorten(key, redact.MaxValue), Allocation: r.Status.Allocations[key], Why: "not an address"})
	}
	return out
}

// Release deletes the allocations owner uid holds in range rangeName for the given addresses (all
// of them when none are given), each guarded by the allocation's own UID, and returns the
// addresses released. Releasing what is not held is not an error, so a release happens exactly
// once however often it is retried. With no addresses given, legacy record entries of uid are
// removed from the range's status too.
func (m *Manager) Release(ctx context.Context, rangeName, uid string, addrs ...netip.Addr) ([]netip.Addr, error) {
	var entries []allocEntry
	for _, e := range m.g.ownedIn(uid) {
		if e.rng == rangeName && (len(addrs) == 0 || slices.Contains(addrs, e.addr())) {
			entries = append(entries, e)
		}
	}
	slices.SortFunc(entries, func(a, b allocEntry) int { return a.addr().Compare(b.addr()) })
	var released []netip.Addr
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return released, err
		}
		if err := m.deleteAllocation(&e, ""); err != nil {
			return released, fmt.Errorf("releasing %s in FloatingIPRange %s: %w", e.addr(), rangeName, err)
		}
		released = append(released, e.addr())
	}
	if len(addrs) == 0 {
		if err := m.dropLegacyKeys(rangeName, uid); err != nil {
			return released, err
		}
	}
	return released, nil
}

// errChanged: the object changed since it was judged; it is judged again on the next pass.
var errChanged = errors.New("the allocation changed since it was judged")

// deleteAllocation deletes e's object if it is still the one the index knows, and drops it from
// the index; with version, only if the object has not changed since it was judged. NotFound and a
// failed UID precondition (the name now holds another object) both mean e's object is gone.
func (m *Manager) deleteAllocation(e *allocEntry, version string) error {
	object := e.object
	pre := &metav1.Preconditions{UID: &object}
	if version != "" {
		pre.ResourceVersion = &version
	}
	err := m.deps.Allocations.Delete(e.name, &metav1.DeleteOptions{Preconditions: pre})
	if apierrors.IsConflict(err) && version != "" {
		return errChanged
	}
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	m.g.remove(e.name, object)
	return nil
}

// dropLegacyKeys removes uid's entries from the range's legacy status.allocations.
func (m *Manager) dropLegacyKeys(rangeName, uid string) error {
	r, err := m.deps.Ranges.Cache().Get(rangeName)
	if err != nil {
		return nil // no range, no record
	}
	keys := keysOf(r.Status.Allocations, uid, nil)
	if len(keys) == 0 {
		return nil
	}
	drop := make(map[string]types.UID, len(keys))
	for _, k := range keys {
		drop[k] = types.UID(uid)
	}
	if err := m.dropRecordKeys(r, drop); err != nil {
		return fmt.Errorf("removing %d legacy entries from FloatingIPRange %s: %w", len(keys), rangeName, err)
	}
	return nil
}

// dropRecordKeys removes keys from r's legacy record, each only while it still records the
// allocation it was judged by (the same UID): a write that meets a conflict is applied again to
// the newer range, whose record may have changed meanwhile. An empty record is left nil.
func (m *Manager) dropRecordKeys(r *v1.FloatingIPRange, keys map[string]types.UID) error {
	_, err := status.UpdateRange(m.deps.Ranges, r, func(s *v1.FloatingIPRangeStatus) {
		for key, uid := range keys {
			if a, ok := s.Allocations[key]; ok && a.UID == uid {
				delete(s.Allocations, key)
			}
		}
		if len(s.Allocations) == 0 {
			s.Allocations = nil
		}
	})
	return err
}

// RangesHeldBy returns the ranges uid holds an address in, by name.
func (m *Manager) RangesHeldBy(uid string) []string {
	var out []string
	for _, e := range m.g.ownedIn(uid) {
		out = append(out, e.rng)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// HeldBy returns the addresses uid holds in range rangeName, lowest first.
func (m *Manager) HeldBy(rangeName, uid string) []netip.Addr {
	out := m.g.holdings(uid, rangeName)
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// Withhold keeps the addresses of set out of what range rangeName hands out, from now on: the
// addresses something outside the operator hands out or uses on the range's network (a Harvester
// pool, a virtual machine). Allocations already made there stay (a later claim never moves an
// address given), and the range's next Summary counts them; nil withholds nothing. It reports
// whether anything changed, and a change runs the range's pass (OnRangeChanged).
func (m *Manager) Withhold(rangeName string, set *netipx.IPSet) bool {
	return m.g.withhold(rangeName, set)
}

// Summary is what the range controller shows of a range.
type Summary struct {
	Capacity *big.Int
	// Used counts the addresses held by FloatingIPs, Retained those kept for guest clusters
	// (deleted, or whose Services may still serve them).
	Used      int
	Retained  int
	Available *big.Int
	// Withheld counts the range's addresses claimed outside the operator (Withhold) that nobody
	// here holds: they are left out of Available.
	Withheld *big.Int
	// Problem keeps the range from handing out addresses; nil when it can.
	Problem *problem.Problem
	Orphans []Orphan
	// Warnings are accepted but deserve a person's look: a range of the whole address space, a
	// range with nothing to hand out.
	Warnings []problem.Problem
}

// Summarize returns the counts and the problem, if any, of r. Used counts every allocation of the
// range, orphans and legacy entries included; Available is what the pool could still hand out.
func (m *Manager) Summarize(r *v1.FloatingIPRange) Summary {
	g := m.g.summarize(r)
	legacy := legacyOrphans(r)
	sum := Summary{Capacity: new(big.Int), Available: new(big.Int), Withheld: new(big.Int), Used: g.held + len(legacy) - g.retained, Retained: g.retained}
	if g.capacity != nil {
		sum.Capacity.Set(g.capacity)
		if g.withheld != nil {
			sum.Withheld.Set(g.withheld)
		}
		sum.Available.Sub(sum.Capacity, big.NewInt(int64(g.poolHeld)))
		sum.Available.Sub(sum.Available, sum.Withheld)
		if sum.Available.Sign() < 0 {
			sum.Available.SetInt64(0)
		}
	}
	sum.Orphans = slices.Concat(g.view.orphans, legacy)
	sum.Problem = m.problemOf(r, g.view)
	sum.Warnings = g.warnings
	return sum
}

// Holders returns what still holds addresses of r, for a message: its allocations, lowest address
// first, then its legacy entries naming no address.
func (m *Manager) Holders(r *v1.FloatingIPRange) []Orphan {
	out := m.g.holdersIn(r.Name)
	slices.SortFunc(out, func(a, b Orphan) int { return netip.MustParseAddr(a.Addr).Compare(netip.MustParseAddr(b.Addr)) })
	for _, key := range indexRecord(r.Status.Allocations).unreadable {
		out = append(out, Orphan{Addr: redact.Shorten(key, redact.MaxValue), Allocation: r.Status.Allocations[key]})
	}
	return out
}

// rangeSeen and rangeGone keep the overlap index as the range informer sees the ranges; a range
// gone takes what the engine kept of it along.
func (m *Manager) rangeSeen(obj interface{}) {
	if r, ok := obj.(*v1.FloatingIPRange); ok {
		m.ranges.set(r)
	}
}

func (m *Manager) rangeGone(obj interface{}) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if r, ok := obj.(*v1.FloatingIPRange); ok {
		m.ranges.remove(r.Name)
		m.g.forgetRange(r.Name)
	}
}

// cachedAllocations reads an allocation from the informer's cache: the operator may list and
// watch allocations, not get them one by one. A cache that lags makes the update that follows a
// read fail with a conflict, which is retried.
type cachedAllocations struct {
	kubefipcontrollers.FloatingIPAllocationController
}

func (c cachedAllocations) Get(name string, _ metav1.GetOptions) (*v1.FloatingIPAllocation, error) {
	return c.Cache().Get(name)
}
