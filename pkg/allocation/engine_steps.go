package allocation

import (
	"math/big"
	"net/netip"
	"slices"
	"time"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
)

// The steps below are what the Manager, the repair and retention ask of the engine. Each takes the
// lock once and returns values (copies of index entries, never pointers into the index), so that
// what was decided under one lock section stays decided under one, and nothing outside the engine
// reads what the lock guards. What a step needs from the caches, the legacy record of a range or
// the overlap index is read by the caller, before or after, outside the lock.

// setChanged sets what hears of every range whose allocations changed; see engine.changed.
func (g *engine) setChanged(fn func(rangeName string)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.changed = fn
}

// unreserve gives back a reservation of addr in rng that owner made and will not create.
func (g *engine) unreserve(rng string, addr netip.Addr, owner ipam.Owner) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st := g.ranges[rng]; st != nil && st.pool != nil {
		g.unreserveLocked(st, addr, owner)
	}
}

// rangeView is what the engine knows of one range that may keep it from handing out addresses:
// its definition's error, its own allocations outside the definition, and its addresses still
// held in a former space. The legacy record and overlaps with other ranges are not the engine's:
// problemOf adds them.
type rangeView struct {
	invalid error
	orphans []Orphan
	// otherSpaces counts the addresses held in a space other than the range's own; former is
	// one of those spaces.
	otherSpaces int
	space       v1.AddressSpace
	former      v1.AddressSpace
	// outline is the range's pool definition, holding nothing, to compare with other ranges'
	// outside the lock; nil when the definition is invalid.
	outline *ipam.Pool
}

// viewLocked is the view of range r, whose state is st. Bounded by the range's orphans and the
// spaces it holds addresses in, never by the number of ranges.
func (g *engine) viewLocked(r *v1.FloatingIPRange, st *rangeState) rangeView {
	v := rangeView{space: st.space}
	if st.pool == nil {
		v.invalid = st.invalid
		return v
	}
	v.outline = st.pool.Outline()
	v.orphans = st.orphanList(&g.idx, r.Name)
	if n, former := g.idx.otherSpaces(r.Name, st.hash); n > 0 {
		v.otherSpaces, v.former = n, g.idx.spaceNamed(r.Name, former)
	}
	return v
}

// outline returns the outline of range r's pool (built if r is new or changed), or nil when its
// definition is invalid: what the overlap check reads outside the lock.
func (g *engine) outline(r *v1.FloatingIPRange) *ipam.Pool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stateLocked(r).pool.Outline()
}

// blockedLocked reports whether the engine's own view of r keeps it from handing out addresses:
// viewLocked's problems without building their messages.
func (g *engine) blockedLocked(r *v1.FloatingIPRange, st *rangeState) bool {
	if st.pool == nil || len(st.orphans) > 0 {
		return true
	}
	n, _ := g.idx.otherSpaces(r.Name, st.hash)
	return n > 0
}

// openFor reads, in one lock section, whether range r can hand a new address to a FloatingIP of
// namespace now, and if not, the reason: the engine's view blocks it (RangeNotReady), the
// namespace's FloatingIPs are at its limit (ClusterLimitReached), or no address is free
// (RangeExhausted); when it can, r's outline, for what the caller judges outside the lock. Bounded
// by one range: the pool finds a free address without a scan.
func (g *engine) openFor(r *v1.FloatingIPRange, namespace string) (reason string, outline *ipam.Pool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.stateLocked(r)
	switch {
	case g.blockedLocked(r, st):
		return v1.ReasonRangeNotReady, nil
	case g.atLimitLocked(r.Name, st, namespace):
		return v1.ReasonClusterLimitReached, nil
	case !st.pool.HasFree():
		return v1.ReasonRangeExhausted, nil
	}
	return "", st.pool.Outline()
}

// freedIn returns the count of addresses freed in the space hash so far (engine.freed).
func (g *engine) freedIn(hash string) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.freed[hash]
}

// claimCheck is what a claim decides before it reserves anything.
type claimCheck struct {
	// holds: the claimant holds want (or, without want, any address) in the range already.
	holds bool
	// view of the range, when the claimant does not hold what it asks for.
	view rangeView
	// taken names the other holder of a static request's address, if any.
	taken error
}

// checkClaim reads, in one lock section, whether c holds what it asks for in r and, if not, the
// range's view and who holds the address a static request names.
func (g *engine) checkClaim(r *v1.FloatingIPRange, c Claimant, want netip.Addr, soft bool) claimCheck {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.stateLocked(r)
	held := g.idx.heldBy(c.UID, r.Name)
	if len(held) > 0 && (!want.IsValid() || slices.Contains(held, want)) {
		return claimCheck{holds: true}
	}
	out := claimCheck{view: g.viewLocked(r, st)}
	if want.IsValid() && !soft {
		if e := g.idx.holder(slot{Addr: want, Space: st.hash}); e != nil && e.owner.UID != c.UID {
			out.taken = takenBy(want, e)
		}
	}
	return out
}

// propose decides, in one lock section, what to propose to the FloatingIP namespace/name about to
// be created in range r for cluster: the first address retained for the cluster in r's space (of
// r's family when ownFamily) whose range is live, else, unless r is blocked (by the engine's view
// or, from the caller, blockedOutside), the lowest free address of r, reserved until now +
// proposalLifetime; or none. live tells which ranges the caller found in the cache and not being
// deleted; a retained address in a range it has not read yet returns, in ask, the ranges whose
// liveness the caller must read, and the caller calls again once it has.
func (g *engine) propose(r *v1.FloatingIPRange, namespace, name string, cluster v1.ClusterReference, ownFamily bool,
	live map[string]bool, blockedOutside bool, now time.Time) (p Proposal, ask []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.stateLocked(r)
	if cluster.Name != "" {
		for _, e := range g.idx.byOwner[retainedOwner(cluster).UID] {
			if e.slot.Space != st.hash || (ownFamily && (!st.prefix.IsValid() || e.addr().Is4() != st.prefix.Addr().Is4())) {
				continue
			}
			isLive, known := live[e.rng]
			switch {
			case !known:
				if !slices.Contains(ask, e.rng) {
					ask = append(ask, e.rng)
				}
			case isLive && len(ask) == 0:
				return Proposal{Range: e.rng, Addr: e.addr(), Retained: true}, nil
			}
		}
	}
	if len(ask) > 0 || blockedOutside || g.blockedLocked(r, st) {
		return Proposal{}, ask
	}
	if addr, err := g.proposeLocked(r.Name, st, namespace, name, now); err == nil {
		p = Proposal{Range: r.Name, Addr: addr}
	}
	return p, nil
}

// withdraw drops the proposal of addr in rng to owner, if there is one.
func (g *engine) withdraw(rng string, addr netip.Addr, owner ipam.Owner) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.withdrawLocked(rng, addr, owner)
}

// ownedIn returns copies of the entries uid holds. Bounded by what uid holds; the caller filters
// and sorts them outside the lock.
func (g *engine) ownedIn(uid string) []allocEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]allocEntry, 0, len(g.idx.byOwner[uid]))
	for _, e := range g.idx.byOwner[uid] {
		out = append(out, *e)
	}
	return out
}

// holdings returns the addresses uid holds in rng, in no particular order.
func (g *engine) holdings(uid, rng string) []netip.Addr {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.idx.heldBy(uid, rng)
}

// rangeSummary is what the engine counts of one range; Manager.Summarize adds the legacy record
// and overlaps.
type rangeSummary struct {
	view     rangeView
	held     int // holders listed under the range, retained ones included
	retained int
	capacity *big.Int
	// poolHeld is what the pool holds: the range's own, foreign and reserved addresses.
	poolHeld int
	// withheld counts the addresses the pool holds back for claims outside the operator.
	withheld *big.Int
	warnings []problem.Problem
}

// summarize counts range r in one lock section: its state (built if new or changed), view,
// holders and pool, each O(1) but for the view's orphans.
func (g *engine) summarize(r *v1.FloatingIPRange) rangeSummary {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.stateLocked(r)
	sum := rangeSummary{view: g.viewLocked(r, st), held: len(g.idx.byRange[r.Name]), retained: g.idx.retained[r.Name]}
	if st.pool != nil {
		sum.capacity = st.pool.Capacity()
		sum.poolHeld = st.pool.Held()
		sum.withheld = st.pool.Withheld()
	}
	sum.warnings = warnings(r, st.pool)
	return sum
}

// holdersIn returns the holders of range rng's addresses, in no particular order. Bounded by the
// range's allocations; the caller sorts them outside the lock.
func (g *engine) holdersIn(rng string) []Orphan {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Orphan, 0, len(g.idx.byRange[rng]))
	for _, e := range g.idx.byRange[rng] {
		out = append(out, Orphan{Addr: e.addr().String(), Allocation: holderOf(e)})
	}
	return out
}

// heldSlots reports, for each of slots, whether an object holds it: one lookup each, so the lock
// section is as long as the list the caller brings (one range's legacy record).
func (g *engine) heldSlots(slots []slot) []bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]bool, len(slots))
	for i, s := range slots {
		out[i] = g.idx.holder(s) != nil
	}
	return out
}

// holders returns a copy of the holder of every slot, for the repair to judge outside the lock.
// This lock section is O(allocations): a copy of each entry and nothing else, run once per reap.
func (g *engine) holders() []allocEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]allocEntry, 0, len(g.idx.bySlot))
	for _, list := range g.idx.bySlot {
		out = append(out, *list[0])
	}
	return out
}

// entries returns a copy of every entry, holders or not, for the trace table; with legacyOnly,
// of the entries named by a bare address, for the rename, which are listed apart so that this
// section is bounded by their number. Like holders, the lock section only copies.
func (g *engine) entries(legacyOnly bool) []allocEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	from := g.idx.byName
	if legacyOnly {
		from = g.idx.legacy
	}
	out := make([]allocEntry, 0, len(from))
	for _, e := range from {
		out = append(out, *e)
	}
	return out
}
