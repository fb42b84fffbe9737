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
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

// maxCollisions bounds how many addresses one dynamic claim tries after AlreadyExists before the
// controller retries it with backoff.
const maxCollisions = 16

// ErrHolderUnknown: a static address is held by an allocation this process has not seen yet. The
// informer's Add will name the holder shortly; the caller retries without telling anyone.
var ErrHolderUnknown = errors.New("the address is held by an allocation not yet seen")

// errTooManyCollisions: every address tried was taken by another writer first.
var errTooManyCollisions = errors.New("too many addresses taken by other writers during one claim")

// allocationCreator is the one call a claim makes: create-if-absent at the API server.
type allocationCreator interface {
	Create(*v1.FloatingIPAllocation) (*v1.FloatingIPAllocation, error)
}

// engine is the index of allocation objects and one ipam pool per range, kept in step. One mutex
// guards both and is never held across an API call: workers reserve different addresses in memory
// and create their objects concurrently, and the API server decides between replicas.
type engine struct {
	mu     sync.Mutex
	idx    allocIndex
	ranges map[string]*rangeState
	// byPrefix finds the ranges whose CIDR holds an address without walking every range: each
	// range is listed under its own (masked) prefix, and an address has at most 129 prefixes.
	byPrefix map[netip.Prefix]map[string]struct{}
	// placeholders are reservations without an object behind them, by when they lapse: an address
	// another writer created first, until the informer brings its object (it may have been deleted
	// before this process saw it), and an address proposed to a FloatingIP about to be created,
	// until that FloatingIP claims it.
	placeholders map[netip.Addr]placeholder
	// changed, when set, hears of every range whose allocations changed; called under mu, so it
	// must not block or call back.
	changed func(rangeName string)
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

func newEngine() *engine {
	return &engine{idx: newAllocIndex(), ranges: map[string]*rangeState{}, byPrefix: map[netip.Prefix]map[string]struct{}{},
		placeholders: map[netip.Addr]placeholder{}}
}

func (g *engine) notifyLocked(rng string) {
	if g.changed != nil {
		g.changed(rng)
	}
}

// proposer stands for the FloatingIP namespace/name, not created yet, that an address is proposed
// to; its UID is not known before the create.
func proposer(namespace, name string) ipam.Owner {
	return ipam.Owner{Namespace: namespace, Name: name, UID: "proposal:" + namespace + "/" + name}
}

// proposeLocked reserves the lowest free address of rng for the FloatingIP namespace/name until
// now+proposalLifetime; a second proposal to the same FloatingIP returns the first.
func (g *engine) proposeLocked(rng, namespace, name string, now time.Time) (netip.Addr, error) {
	st := g.ranges[rng]
	if st == nil || st.pool == nil {
		return netip.Addr{}, fmt.Errorf("%w: %s", ErrRangeNotFound, rng)
	}
	owner := proposer(namespace, name)
	addr, err := st.pool.ReserveNext(owner)
	if err != nil {
		return netip.Addr{}, err
	}
	g.placeholders[addr] = placeholder{rng: rng, owner: owner, expires: now.Add(proposalLifetime)}
	return addr, nil
}

// withdrawLocked drops the proposal of addr to owner, if there is one.
func (g *engine) withdrawLocked(rng string, addr netip.Addr, owner ipam.Owner) {
	ph, ok := g.placeholders[addr]
	if !ok || ph.owner.UID != owner.UID {
		return
	}
	delete(g.placeholders, addr)
	if st := g.ranges[rng]; st != nil && st.pool != nil {
		st.pool.Unreserve(addr, owner)
	}
}

// unknownHolder stands for the holder of an address whose object this process has not seen: a
// foreign reservation, so no worker collides on it again, displaced by the object's Add.
func unknownHolder(addr netip.Addr) ipam.Owner {
	return ipam.Owner{Name: "unknown holder", UID: "unknown:" + addr.String()}
}

// newAllocation is the object whose creation claims addr in rng for owner.
func newAllocation(addr netip.Addr, rng string, owner ipam.Owner) *v1.FloatingIPAllocation {
	family := "IPv4"
	if addr.Is6() {
		family = "IPv6"
	}
	return &v1.FloatingIPAllocation{
		ObjectMeta: metav1.ObjectMeta{
			Name: v1.AllocationName(addr),
			Labels: map[string]string{
				v1.LabelRange:          v1.RangeLabelValue(rng),
				v1.LabelIPFamily:       family,
				v1.LabelOwnerNamespace: owner.Namespace,
			},
		},
		Spec: v1.FloatingIPAllocationSpec{
			Address: addr.String(),
			Range:   rng,
			Owner:   v1.FloatingIPReference{Namespace: owner.Namespace, Name: owner.Name, UID: types.UID(owner.UID)},
		},
	}
}

// indexLocked applies an allocation the API server has: index, then every pool. The owning range's
// pool confirms it for its owner; every other pool that could hand the address out holds it as
// foreign, so the name, not the range, keeps one address with one owner.
func (g *engine) indexLocked(a *v1.FloatingIPAllocation) {
	e, replaced, changed := g.idx.upsert(a)
	if !changed {
		return
	}
	if replaced != nil {
		g.releaseLocked(replaced)
	}
	delete(g.placeholders, e.addr)
	if st := g.ranges[e.rng]; st != nil && st.pool != nil {
		if err := st.pool.Check(e.addr); err != nil {
			st.orphans[e.addr] = why(err)
		}
	}
	for _, st := range g.holdingLocked(e.addr) {
		if st.pool.Check(e.addr) == nil {
			_, _ = st.pool.Confirm(e.addr, e.owner)
		}
	}
	g.notifyLocked(e.rng)
}

// holdingLocked returns the states of the ranges whose CIDR holds addr and whose pool is valid.
func (g *engine) holdingLocked(addr netip.Addr) []*rangeState {
	var out []*rangeState
	for bits := addr.BitLen(); bits >= 0; bits-- {
		for name := range g.byPrefix[netip.PrefixFrom(addr, bits).Masked()] {
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
		delete(st.orphans, e.addr)
	}
	for _, st := range g.holdingLocked(e.addr) {
		if h, ok := st.pool.Holder(e.addr); ok && h.UID == e.owner.UID {
			st.pool.Release(e.addr)
		}
	}
	g.notifyLocked(e.rng)
}

// expirePlaceholders drops the foreign reservations whose object never arrived.
func (g *engine) expirePlaceholders(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for addr, ph := range g.placeholders {
		if now.Before(ph.expires) {
			continue
		}
		delete(g.placeholders, addr)
		if st := g.ranges[ph.rng]; st != nil && st.pool != nil {
			st.pool.Unreserve(addr, ph.owner)
		}
	}
}

func (g *engine) onAdd(obj interface{}) {
	if a, ok := obj.(*v1.FloatingIPAllocation); ok {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.indexLocked(a)
	}
}

func (g *engine) onUpdate(_, obj interface{}) { g.onAdd(obj) }

func (g *engine) onDelete(obj interface{}) {
	name, object, ok := deletedAllocation(obj)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if e := g.idx.remove(name, object); e != nil {
		g.releaseLocked(e)
	}
}

// claimLoop claims an address in rng for owner by creating its allocation object. want, when
// valid, is a static request: exactly one create, and AlreadyExists with another owner is a
// *ipam.TakenError naming the holder. soft makes want a proposal (see Manager.Propose) that is
// replaced by the lowest free address if another owner holds it. Without want the lowest free address is tried, then the next after each
// collision with another writer. An address the owner already holds in rng is returned as it is.
func (g *engine) claimLoop(ctx context.Context, c allocationCreator, rng string, owner ipam.Owner, want netip.Addr, soft bool) (netip.Addr, error) {
	for pick := 0; pick < maxCollisions; pick++ {
		if err := ctx.Err(); err != nil {
			return netip.Addr{}, err
		}
		addr, done, err := g.reserve(rng, owner, want, soft)
		if err != nil || done {
			return addr, err
		}
		created, err := c.Create(newAllocation(addr, rng, owner))
		switch {
		case err == nil:
			g.mu.Lock()
			g.indexLocked(created)
			g.mu.Unlock()
			return addr, nil
		case apierrors.IsAlreadyExists(err):
			holder, known := g.collided(rng, addr, owner)
			if known && holder.UID == owner.UID {
				return addr, nil // an earlier try, or another replica, claimed it for this owner
			}
			if want.IsValid() {
				// Unknown, the holder may be this very owner, claimed by another replica: wait
				// for its object rather than take a second address.
				if !known {
					return netip.Addr{}, ErrHolderUnknown
				}
				if !soft {
					return netip.Addr{}, &ipam.TakenError{Addr: addr, Holder: holder}
				}
			}
			want = netip.Addr{}
		default:
			g.mu.Lock()
			if st := g.ranges[rng]; st != nil && st.pool != nil {
				st.pool.Unreserve(addr, owner)
			}
			g.mu.Unlock()
			return netip.Addr{}, fmt.Errorf("claiming %s in %s: %w", addr, rng, err)
		}
	}
	return netip.Addr{}, errTooManyCollisions
}

// reserve picks and reserves the address to create, under the lock. done is true when the owner
// already holds what it asks for.
func (g *engine) reserve(rng string, owner ipam.Owner, want netip.Addr, soft bool) (addr netip.Addr, done bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.ranges[rng]
	if st == nil || st.pool == nil {
		return netip.Addr{}, false, fmt.Errorf("%w: %s", ErrRangeNotFound, rng)
	}
	p := st.pool
	if soft && want.IsValid() {
		g.withdrawLocked(rng, want, proposer(owner.Namespace, owner.Name))
	}
	if held := g.idx.heldBy(owner.UID, rng); len(held) > 0 && (!want.IsValid() || slices.Contains(held, want)) {
		if want.IsValid() {
			return want, true, nil
		}
		return held[0], true, nil
	}
	if want.IsValid() {
		if e := g.idx.byAddr[want]; e != nil && e.owner.UID != owner.UID {
			if !soft {
				return netip.Addr{}, false, &ipam.TakenError{Addr: want, Holder: e.owner}
			}
			want = netip.Addr{}
		}
	}
	if want.IsValid() {
		err := p.Reserve(want, owner)
		if err == nil {
			return want, false, nil
		}
		if !soft {
			return netip.Addr{}, false, err
		}
	}
	addr, err = p.ReserveNext(owner)
	return addr, false, err
}

// collided records that addr was created by someone else first and reports the holder if known.
// An unknown holder gets a foreign reservation until the informer brings its object.
func (g *engine) collided(rng string, addr netip.Addr, owner ipam.Owner) (ipam.Owner, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var p *ipam.Pool
	if st := g.ranges[rng]; st != nil {
		p = st.pool
	}
	if p != nil {
		p.Unreserve(addr, owner)
	}
	if e := g.idx.byAddr[addr]; e != nil {
		return e.owner, true
	}
	if p != nil && p.Reserve(addr, unknownHolder(addr)) == nil {
		g.placeholders[addr] = placeholder{rng: rng, owner: unknownHolder(addr), expires: time.Now().Add(placeholderLifetime)}
	}
	return ipam.Owner{}, false
}
