package ipam

import (
	"fmt"
	"math/big"
	"net/netip"
	"slices"

	"go4.org/netipx"
)

// Owner identifies who holds an address: a FloatingIP object. Only UID is
// compared, because a deleted and re-created object with the same name is a
// different owner; Namespace and Name are carried for messages.
type Owner struct {
	Namespace, Name, UID string
}

func (o Owner) String() string {
	if o.Namespace == "" {
		return fmt.Sprintf("%s (uid %s)", o.Name, o.UID)
	}
	return fmt.Sprintf("%s/%s (uid %s)", o.Namespace, o.Name, o.UID)
}

// holdings are the addresses of one owner in one pool. Owners normally hold
// exactly one address; the overflow slice exists only for the short window
// of a static move (claim new, then release old), so the common case costs
// no extra allocation.
type holdings struct {
	first netip.Addr
	more  []netip.Addr
}

func (h *holdings) add(a netip.Addr) {
	if !h.first.IsValid() {
		h.first = a
		return
	}
	h.more = append(h.more, a)
}

// remove drops a and reports whether the owner now holds nothing.
func (h *holdings) remove(a netip.Addr) (empty bool) {
	if h.first == a {
		if len(h.more) == 0 {
			h.first = netip.Addr{}
			return true
		}
		h.first = h.more[len(h.more)-1]
		h.more = h.more[:len(h.more)-1]
		return false
	}
	if i := slices.Index(h.more, a); i >= 0 {
		h.more = slices.Delete(h.more, i, i+1)
	}
	return false
}

// Pool allocates addresses from one range. A Pool is not safe for
// concurrent use: the allocation engine (pkg/allocation) guards its pools
// with one mutex, together with its index of allocation objects.
type Pool struct {
	def   rangeDef
	free  freeSet
	held  map[netip.Addr]Owner
	byUID map[string]holdings
	// tentative marks the held addresses that are only reserved (see reserve.go); nil until the
	// first reservation.
	tentative map[netip.Addr]struct{}
	// withheld are the addresses claimed outside the operator, never free (see withhold.go);
	// withheldFree counts those of them nobody here holds. Both nil when nothing is withheld.
	withheld     *netipx.IPSet
	withheldFree *big.Int
}

// NewPool builds an empty pool for cidr minus exclude. Each exclude is a
// single address ("10.0.0.5"), a CIDR ("10.0.0.8/30") or an inclusive range
// ("10.0.0.20-10.0.0.29") and must lie entirely inside cidr.
func NewPool(cidr string, exclude []string) (*Pool, error) {
	d, err := parseDef(cidr, exclude)
	if err != nil {
		return nil, err
	}
	return &Pool{
		def:   d,
		free:  newFreeSet(d.avail.Ranges()),
		held:  make(map[netip.Addr]Owner),
		byUID: make(map[string]holdings),
	}, nil
}

// Prefix returns the range's CIDR.
func (p *Pool) Prefix() netip.Prefix { return p.def.prefix }

// Capacity is the number of addresses the pool can ever hand out.
func (p *Pool) Capacity() *big.Int { return new(big.Int).Set(p.def.capacity) }

// Check reports whether addr may be held in this pool at all, regardless of
// whether someone holds it now: nil, or an error wrapping ErrOutOfRange,
// ErrReserved or ErrExcluded.
func (p *Pool) Check(addr netip.Addr) error { return p.def.check(addr) }

// Claim records that owner holds addr, for filling a new pool from the
// allocation objects the API server has. It is idempotent when owner
// already holds addr, and confirms owner's own reservation of it. If the
// address is held or reserved by another UID the error is a *TakenError
// naming the holder.
//
// Claim does not enforce one address per owner: if owner already holds a
// different address it ends up holding both. This is deliberate so a
// FloatingIP can move to a new static address by claiming the new one
// before releasing the old, and never be left with neither if the second
// step fails.
func (p *Pool) Claim(addr netip.Addr, owner Owner) error {
	return p.take(addr, owner, false)
}

// take holds addr for owner, for certain (Claim) or tentatively (Reserve). Taking an address the
// owner holds already changes nothing, except that a claim makes a reservation certain.
func (p *Pool) take(addr netip.Addr, owner Owner, tentative bool) error {
	if owner.UID == "" {
		verb := "claiming"
		if tentative {
			verb = "reserving"
		}
		return fmt.Errorf("%w: %s %s", errInvalidOwner, verb, addr)
	}
	if err := p.def.check(addr); err != nil {
		return err
	}
	if h, ok := p.held[addr]; ok {
		if h.UID != owner.UID {
			return &TakenError{Addr: addr, Holder: h}
		}
		if !tentative {
			delete(p.tentative, addr)
		}
		return nil
	}
	if tentative {
		// A reservation is a new request: an address claimed outside the operator is refused.
		// A claim is the record of truth, which keeps what it already holds.
		if err := p.withheldError(addr); err != nil {
			return err
		}
	}
	p.hold(addr, owner)
	if tentative {
		p.markTentative(addr)
	}
	return nil
}

// HasFree reports whether the pool has an address nobody holds or reserves.
func (p *Pool) HasFree() bool {
	_, ok := p.free.lowest()
	return ok
}

// nextFree returns the lowest free address without holding it.
func (p *Pool) nextFree() (netip.Addr, error) {
	a, ok := p.free.lowest()
	if !ok {
		return netip.Addr{}, fmt.Errorf("%w: %s has no free address", ErrExhausted, p.def.prefix)
	}
	return a, nil
}

func (p *Pool) hold(a netip.Addr, owner Owner) {
	if p.isWithheld(a) {
		p.withheldFree.Sub(p.withheldFree, big.NewInt(1))
	}
	p.free.take(a)
	p.held[a] = owner
	h := p.byUID[owner.UID]
	h.add(a)
	p.byUID[owner.UID] = h
}

// Release frees addr and reports who held it.
func (p *Pool) Release(addr netip.Addr) (Owner, bool) {
	o, ok := p.held[addr]
	if !ok {
		return Owner{}, false
	}
	delete(p.held, addr)
	delete(p.tentative, addr)
	if p.isWithheld(addr) {
		// Released, but still claimed outside the operator: not free.
		p.withheldFree.Add(p.withheldFree, big.NewInt(1))
	} else {
		p.free.put(addr)
	}
	h := p.byUID[o.UID]
	if h.remove(addr) {
		delete(p.byUID, o.UID)
	} else {
		p.byUID[o.UID] = h
	}
	return o, true
}

// Holder reports who holds addr.
func (p *Pool) Holder(addr netip.Addr) (Owner, bool) {
	o, ok := p.held[addr]
	return o, ok
}

// addressOf returns the address uid holds, the lowest if it holds several.
func (p *Pool) addressOf(uid string) (netip.Addr, bool) {
	h, ok := p.byUID[uid]
	if !ok {
		return netip.Addr{}, false
	}
	if len(h.more) == 0 {
		return h.first, true
	}
	return slices.MinFunc(append([]netip.Addr{h.first}, h.more...), netip.Addr.Compare), true
}
