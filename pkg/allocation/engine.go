package allocation

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

// maxCollisions bounds how many addresses one dynamic claim tries after AlreadyExists before the
// controller retries it with backoff.
const maxCollisions = 16

// ErrHolderUnknown means a static address is held by an allocation this process has not seen yet. The
// informer's Add will name the holder shortly; the caller retries without telling anyone.
var ErrHolderUnknown = errors.New("the address is held by an allocation not yet seen")

// errTooManyCollisions: every address tried was taken by another writer first.
var errTooManyCollisions = errors.New("too many addresses taken by other writers during one claim")

// allocationWriter is what a claim writes: create-if-absent at the API server, and the update that
// hands a retained address back to its cluster.
type allocationWriter interface {
	Create(*v1.FloatingIPAllocation) (*v1.FloatingIPAllocation, error)
	Update(*v1.FloatingIPAllocation) (*v1.FloatingIPAllocation, error)
	Get(name string, opts metav1.GetOptions) (*v1.FloatingIPAllocation, error)
}

// Claimant is who claims an address: a FloatingIP, and the Rancher provisioning cluster it was
// created for, if any, whose retained address it may take back.
type Claimant struct {
	ipam.Owner
	// Cluster is the provisioning cluster; empty for a FloatingIP discovery did not create.
	Cluster v1.ClusterReference
	// Labels are Cluster's labels, which a range's spec.clusterSelector judges.
	Labels map[string]string
}

// engine is the index of allocation objects and one ipam pool per range, kept in step. One mutex
// guards both and is never held across an API call: workers reserve different addresses in memory
// and create their objects concurrently, and the API server decides between replicas.
//
// The mutex and everything it guards are the engine's alone: only methods of engine, declared in
// engine*.go, index.go, rangestate.go and rangeindex.go, touch them (TestEngineOwnsItsLock holds
// the package to it). Each method the Manager calls takes the lock once, for one consistent step
// (a claim's reservation, a release, the view of one range, a copy for the repair), and hands back
// values, never a pointer into what the lock guards. No lock section reads a cache, calls the API
// server or walks every range or allocation; the few that copy every allocation for the repair
// say so.
type engine struct {
	mu     sync.Mutex
	idx    allocIndex
	ranges map[string]*rangeState
	// byPrefix finds the ranges of a space whose CIDR holds an address without walking every
	// range: each range is listed under its space and its own (masked) prefix, and an address has
	// at most 129 prefixes.
	byPrefix prefixSets
	// placeholders are reservations without an object behind them, by when they lapse: an address
	// another writer created first, until the informer brings its object (it may have been deleted
	// before this process saw it), and an address proposed to a FloatingIP about to be created,
	// until that FloatingIP claims it.
	placeholders map[slot]placeholder
	// changed, when set, hears of every range whose allocations changed; called under mu, so it
	// must not block or call back.
	changed func(rangeName string)
	// freed counts, by space hash, the times an address of one of the space's pools became free
	// or a pool was built: while a space's count stays the same, a range of it found full stays
	// full, and selection skips it (Manager.Choose).
	freed map[string]uint64
	// withheld are, by range name, the addresses claimed outside the operator on the range's
	// network (Manager.Withhold): its pool never hands them out.
	withheld map[string]withholding
}

type placeholder struct {
	rng     string
	owner   ipam.Owner
	expires time.Time
}

// placeholderLifetime is how long an address another writer took stays held without its object.
const placeholderLifetime = 30 * time.Second

// proposalLifetime is how long a proposed address stays reserved for a FloatingIP that has not
// claimed it: longer than a burst of new clusters keeps the FloatingIP workers busy. A proposal
// that lapses costs nothing but a write: its FloatingIP takes the lowest free address instead.
const proposalLifetime = 5 * time.Minute

// newEngine returns an empty engine; legacySpace, when set, tells the space hash of a range for an
// allocation named by its bare address. It is called under the engine's lock, so it must not
// block or call back.
func newEngine(legacySpace func(rangeName string) string) *engine {
	idx := newAllocIndex()
	idx.legacySpace = legacySpace
	return &engine{idx: idx, ranges: map[string]*rangeState{}, byPrefix: prefixSets{},
		placeholders: map[slot]placeholder{}, freed: map[string]uint64{}, withheld: map[string]withholding{}}
}

func (g *engine) notifyLocked(rng string) {
	if g.changed != nil && rng != "" {
		g.changed(rng)
	}
}

// proposer stands for the FloatingIP namespace/name, not created yet, that an address is proposed
// to; its UID is not known before the create.
func proposer(namespace, name string) ipam.Owner {
	return ipam.Owner{Namespace: namespace, Name: name, UID: "proposal:" + namespace + "/" + name}
}

// proposeLocked reserves the lowest free address of st for the FloatingIP namespace/name until
// now+proposalLifetime; a second proposal to the same FloatingIP returns the first.
func (g *engine) proposeLocked(rng string, st *rangeState, namespace, name string, now time.Time) (netip.Addr, error) {
	owner := proposer(namespace, name)
	addr, err := st.pool.ReserveNext(owner)
	if err != nil {
		return netip.Addr{}, err
	}
	g.placeholders[slot{Addr: addr, Space: st.hash}] = placeholder{rng: rng, owner: owner, expires: now.Add(proposalLifetime)}
	return addr, nil
}

// withdrawLocked drops the proposal of addr to owner in rng, if there is one.
func (g *engine) withdrawLocked(rng string, addr netip.Addr, owner ipam.Owner) {
	st := g.ranges[rng]
	if st == nil || st.pool == nil {
		return
	}
	s := slot{Addr: addr, Space: st.hash}
	ph, ok := g.placeholders[s]
	if !ok || ph.owner.UID != owner.UID {
		return
	}
	delete(g.placeholders, s)
	g.unreserveLocked(st, addr, owner)
}

// unreserveLocked gives back owner's reservation of addr in st's pool, and counts it as freed.
func (g *engine) unreserveLocked(st *rangeState, addr netip.Addr, owner ipam.Owner) {
	if st.pool.Unreserve(addr, owner) {
		g.freed[st.hash]++
	}
}

// unknownHolder stands for the holder of an address whose object this process has not seen: a
// foreign reservation, so no worker collides on it again, displaced by the object's Add.
func unknownHolder(addr netip.Addr) ipam.Owner {
	return ipam.Owner{Name: "unknown holder", UID: "unknown:" + addr.String()}
}

// newAllocation is the object whose creation claims addr of space in rng for owner.
func newAllocation(space v1.AddressSpace, addr netip.Addr, rng string, owner ipam.Owner) *v1.FloatingIPAllocation {
	a := &v1.FloatingIPAllocation{
		ObjectMeta: metav1.ObjectMeta{
			Name: v1.AllocationName(space, addr),
			Labels: map[string]string{
				v1.LabelRange:            v1.RangeLabelValue(rng),
				v1.LabelIPFamily:         harvester.FamilyOfAddr(addr).String(),
				v1.LabelAddress:          v1.AllocationAddressText(addr),
				v1.LabelSpace:            space.Hash(),
				v1.LabelHarvesterCluster: v1.LabelValue(space.HarvesterClusterName),
				v1.LabelHarvesterNetwork: v1.LabelValue(space.HarvesterNetworkName),
			},
		},
		Spec: v1.FloatingIPAllocationSpec{
			Address: addr.String(),
			Range:   rng,
			Space:   space,
		},
	}
	setHolder(a, owner)
	return a
}

// setHolder makes a held by owner, no longer retained.
func setHolder(a *v1.FloatingIPAllocation, owner ipam.Owner) {
	a.Spec.Owner = v1.FloatingIPReference{Namespace: owner.Namespace, Name: owner.Name, UID: types.UID(owner.UID)}
	a.Spec.Retained = nil
	a.Labels[v1.LabelOwnerNamespace] = owner.Namespace
	a.Labels[v1.LabelState] = StateHeld
	delete(a.Labels, v1.LabelRetainedFor)
}

// setRetained makes a retained as r says, until r.Until; spec.owner keeps its last holder.
func setRetained(a *v1.FloatingIPAllocation, r v1.Retention) {
	// Rounded up to the second the API keeps: a retention never ends before its time.
	r.Until = metav1.NewTime(r.Until.UTC().Add(time.Second - time.Nanosecond).Truncate(time.Second))
	cluster := r.Cluster
	a.Spec.Retained = &r
	if a.Labels == nil {
		a.Labels = map[string]string{}
	}
	a.Labels[v1.LabelState] = StateRetained
	a.Labels[v1.LabelRetainedFor] = v1.LabelValue(cluster.Name)
}

// The values of v1.LabelState.
const (
	StateHeld     = "Held"
	StateRetained = "Retained"
)

// holderChangedLocked brings the pools in step with a slot whose holder went from before to after
// (either may be nil; both the same entry when another object of the slot came or went). The
// holder's range confirms it for its owner; every other range of the space that could hand the
// address out holds it as foreign, so that the name, not the range, keeps one address of a space
// with one owner.
func (g *engine) holderChangedLocked(before, after *allocEntry) {
	if before == after {
		return
	}
	if before != nil {
		g.releaseLocked(before)
	}
	if after == nil {
		return
	}
	delete(g.placeholders, after.slot)
	if st := g.ranges[after.rng]; st != nil && st.pool != nil {
		if err := st.pool.Check(after.addr()); err != nil {
			st.orphans[after.addr()] = orphanNote{why: why(err), space: after.slot.Space}
		}
	}
	for _, st := range g.holdingLocked(after.slot) {
		if st.pool.Check(after.addr()) == nil {
			_, _ = st.pool.Confirm(after.addr(), after.owner)
		}
	}
	g.notifyLocked(after.rng)
}

// holdingLocked returns the states of the ranges of s's space whose CIDR holds s's address and
// whose pool is valid.
func (g *engine) holdingLocked(s slot) []*rangeState {
	var out []*rangeState
	for bits := s.Addr.BitLen(); bits >= 0; bits-- {
		for name := range g.byPrefix[spacePrefix{space: s.Space, prefix: netip.PrefixFrom(s.Addr, bits).Masked()}] {
			if st := g.ranges[name]; st != nil && st.pool != nil {
				out = append(out, st)
			}
		}
	}
	return out
}

// releaseLocked frees e's address in every pool where e's owner holds it.
func (g *engine) releaseLocked(e *allocEntry) {
	if st := g.ranges[e.rng]; st != nil {
		delete(st.orphans, e.addr())
	}
	for _, st := range g.holdingLocked(e.slot) {
		if h, ok := st.pool.Holder(e.addr()); ok && h.UID == e.owner.UID {
			st.pool.Release(e.addr())
			g.freed[st.hash]++
		}
	}
	g.notifyLocked(e.rng)
}

// expirePlaceholders drops the foreign reservations whose object never arrived. The lock section
// walks the placeholders only: each lapses within proposalLifetime, so they are the claims and
// proposals of the last few minutes, not every allocation.
func (g *engine) expirePlaceholders(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for s, ph := range g.placeholders {
		if now.Before(ph.expires) {
			continue
		}
		delete(g.placeholders, s)
		if st := g.ranges[ph.rng]; st != nil && st.pool != nil {
			g.unreserveLocked(st, s.Addr, ph.owner)
		}
	}
}

func (g *engine) onAdd(obj interface{}) {
	if a, ok := obj.(*v1.FloatingIPAllocation); ok {
		g.apply(a)
	}
}

// apply indexes an allocation the API server has: an informer event, or the object a write of
// this process returned. One lock section: the index and the pools move together.
func (g *engine) apply(a *v1.FloatingIPAllocation) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if before, after, changed := g.idx.upsert(a); changed {
		g.holderChangedLocked(before, after)
	}
}

// remove drops the allocation name (under object, or any UID when empty) from the index and frees
// its address in the pools, in one lock section.
func (g *engine) remove(name string, object types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if before, after, removed := g.idx.remove(name, object); removed {
		g.holderChangedLocked(before, after)
	}
}

func (g *engine) onUpdate(_, obj interface{}) { g.onAdd(obj) }

func (g *engine) onDelete(obj interface{}) {
	name, object, ok := deletedAllocation(obj)
	if !ok {
		return
	}
	g.remove(name, object)
}

// pick is what reserve decided: an address to create, one the owner holds already (done), or a
// retained address to take back (takeBack).
type pick struct {
	addr     netip.Addr
	done     bool
	takeBack *allocEntry
	// pending: addr is a new address counted against the range's limit until its create is
	// settled.
	pending bool
}

// claimLoop claims an address in rng for c by creating its allocation object. want, when valid, is
// a static request: exactly one create, and AlreadyExists with another owner is a *ipam.TakenError
// naming the holder. soft makes want a proposal (see Manager.Propose) that is replaced by the
// lowest free address if another owner holds it. Without want the address retained for c's
// cluster in rng is taken back, else the lowest free address is tried, then the next after each
// collision with another writer. An address the owner already holds in rng is returned as it is.
func (g *engine) claimLoop(ctx context.Context, w allocationWriter, rng string, c Claimant, want netip.Addr, soft bool) (netip.Addr, error) {
	owner := c.Owner
	for try := 0; try < maxCollisions; try++ {
		if err := ctx.Err(); err != nil {
			return netip.Addr{}, err
		}
		p, space, err := g.reserve(rng, c, want, soft)
		if err != nil || p.done {
			return p.addr, err
		}
		if p.takeBack != nil {
			if ok, err := g.takeBack(w, p.takeBack, owner); ok || err != nil {
				return p.addr, err
			}
			continue // the object changed meanwhile: decide again
		}
		addr := p.addr
		created, err := w.Create(newAllocation(space, addr, rng, owner))
		if err == nil {
			g.apply(created)
		}
		if p.pending {
			g.settle(rng, owner.Namespace)
		}
		switch {
		case err == nil:
			return addr, nil
		case apierrors.IsAlreadyExists(err):
			holder := g.collided(rng, addr, owner)
			if holder != nil && holder.owner.UID == owner.UID {
				return addr, nil // an earlier try, or another replica, claimed it for this owner
			}
			if want.IsValid() {
				// Unknown, the holder may be this very owner, claimed by another replica: wait
				// for its object rather than take a second address.
				if holder == nil {
					return netip.Addr{}, ErrHolderUnknown
				}
				if !soft {
					return netip.Addr{}, takenBy(addr, holder)
				}
			}
			want = netip.Addr{}
		default:
			g.unreserve(rng, addr, owner)
			return netip.Addr{}, fmt.Errorf("claiming %s in %s: %w", addr, rng, err)
		}
	}
	return netip.Addr{}, errTooManyCollisions
}

// takeBack hands the retained address of e to owner: an update guarded by the object's
// resourceVersion, so that of two writers one wins and no moment leaves the address free. ok is
// false when the object is no longer e as the index knew it; the claim then decides again.
func (g *engine) takeBack(w allocationWriter, e *allocEntry, owner ipam.Owner) (ok bool, err error) {
	a, err := w.Get(e.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		g.remove(e.name, e.object)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading retained allocation %s: %w", e.name, err)
	}
	if a.UID != e.object || a.Spec.Retained == nil {
		g.apply(a)
		return false, nil
	}
	a = a.DeepCopy()
	if a.Labels == nil {
		a.Labels = map[string]string{}
	}
	setHolder(a, owner)
	updated, err := w.Update(a)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("taking back retained allocation %s: %w", e.name, err)
	}
	g.apply(updated)
	return true, nil
}

// reserve decides what to claim, under the lock, and reserves an address to create in the pool.
// One lock section covers the whole check-and-set: a proposal withdrawn, the owner's holdings and
// the cluster's retained addresses read (both bounded by the owner), the static address's holder
// checked, and the pick reserved; a pool finds the lowest free address without a scan.
func (g *engine) reserve(rng string, c Claimant, want netip.Addr, soft bool) (p pick, space v1.AddressSpace, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	owner := c.Owner
	st := g.ranges[rng]
	if st == nil || st.pool == nil {
		return pick{}, space, fmt.Errorf("%w: %s", ErrRangeNotFound, rng)
	}
	space = st.space
	pool := st.pool
	if soft && want.IsValid() {
		g.withdrawLocked(rng, want, proposer(owner.Namespace, owner.Name))
	}
	if held := g.idx.heldBy(owner.UID, rng); len(held) > 0 && (!want.IsValid() || slices.Contains(held, want)) {
		if want.IsValid() {
			return pick{addr: want, done: true}, space, nil
		}
		return pick{addr: held[0], done: true}, space, nil
	}
	if e := g.retainedForLocked(c, rng, want); e != nil && (!want.IsValid() || soft || want == e.addr()) {
		return pick{addr: e.addr(), takeBack: e}, space, nil
	}
	if want.IsValid() {
		if e := g.idx.holder(slot{Addr: want, Space: st.hash}); e != nil && e.owner.UID != owner.UID {
			if e.rng == rng && e.retained != nil && e.retained.whileServed && e.last.UID == owner.UID {
				// The FloatingIP that gave the address up asks for it again: its guest serves it
				// for that very FloatingIP.
				return pick{addr: want, takeBack: e}, space, nil
			}
			if !soft {
				return pick{}, space, takenBy(want, e)
			}
			want = netip.Addr{}
		}
	}
	if g.atLimitLocked(rng, st, owner.Namespace) {
		return pick{}, space, &LimitError{Range: rng, Namespace: owner.Namespace, Limit: st.limit}
	}
	if want.IsValid() {
		err := pool.Reserve(want, owner)
		if err == nil {
			return g.pendingLocked(st, pick{addr: want}, owner.Namespace), space, nil
		}
		if !soft {
			return pick{}, space, err
		}
	}
	addr, err := pool.ReserveNext(owner)
	if err != nil {
		return pick{}, space, err
	}
	return g.pendingLocked(st, pick{addr: addr}, owner.Namespace), space, nil
}

// pendingLocked counts p, a new address reserved in st, against the limit of namespace, when st
// has one, until settle.
func (g *engine) pendingLocked(st *rangeState, p pick, namespace string) pick {
	if st.limit > 0 {
		st.pending[namespace]++
		p.pending = true
	}
	return p
}

// settle ends what pendingLocked counted for a claim in rng whose create returned: the object, if
// created, is in the index by now.
func (g *engine) settle(rng, namespace string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st := g.ranges[rng]; st != nil && st.pending[namespace] > 0 {
		if st.pending[namespace]--; st.pending[namespace] == 0 {
			delete(st.pending, namespace)
		}
	}
}

// retainedForLocked returns the address retained in rng for c's cluster that c may take back, or
// nil: a FloatingIP of the cluster, other than the one that held it last unless it was kept while
// served; want, when c asks for it, first.
func (g *engine) retainedForLocked(c Claimant, rng string, want netip.Addr) *allocEntry {
	if c.Cluster.Name == "" {
		return nil
	}
	var first *allocEntry
	for _, e := range g.idx.byOwner[retainedOwner(c.Cluster).UID] {
		if e.rng != rng || e.last.UID == c.UID && !e.retained.whileServed {
			continue
		}
		if e.addr() == want {
			return e
		}
		if first == nil {
			first = e
		}
	}
	return first
}

// takenBy is the error of a static request for an address e holds.
func takenBy(addr netip.Addr, e *allocEntry) error {
	if e.retained != nil {
		return &RetainedError{Addr: addr, Cluster: e.retained.cluster, Until: e.retained.until, Allocation: e.name,
			WhileServed: e.retained.whileServed, ServedBy: e.retained.servedBy}
	}
	return &ipam.TakenError{Addr: addr, Holder: e.owner}
}

// collided records that addr was created by someone else first and returns a copy of its holder,
// or nil when unknown. An unknown holder gets a foreign reservation until the informer brings its
// object. One lock section: the pick given back, the holder looked up, the placeholder set.
func (g *engine) collided(rng string, addr netip.Addr, owner ipam.Owner) *allocEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.ranges[rng]
	if st == nil || st.pool == nil {
		return nil
	}
	g.unreserveLocked(st, addr, owner)
	s := slot{Addr: addr, Space: st.hash}
	if e := g.idx.holder(s); e != nil {
		held := *e
		return &held
	}
	if st.pool.Reserve(addr, unknownHolder(addr)) == nil {
		g.placeholders[s] = placeholder{rng: rng, owner: unknownHolder(addr), expires: time.Now().Add(placeholderLifetime)}
	}
	return nil
}
