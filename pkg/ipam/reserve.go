package ipam

import (
	"fmt"
	"net/netip"
)

// Reservations let concurrent workers pick different addresses before the record of truth, kept
// outside this package, has accepted any of them: a worker reserves an address, creates the object
// that records it, and then confirms the address or, if the create failed, unreserves it. A
// reserved (tentative) address is held like any other: it is neither free nor handed to anyone
// else, and Holder names its owner. Only Held leaves it out, and only Confirm, Claim, Unreserve or
// Release change it.

// ReserveNext reserves the lowest free address for owner, tentatively. It is idempotent per owner:
// one who already holds or has reserved an address in this pool gets that one back (the lowest, if
// several), so a retrying worker never reserves a second.
func (p *Pool) ReserveNext(owner Owner) (netip.Addr, error) {
	if owner.UID == "" {
		return netip.Addr{}, fmt.Errorf("%w: reserving in %s", errInvalidOwner, p.def.prefix)
	}
	if a, ok := p.addressOf(owner.UID); ok {
		return a, nil
	}
	a, err := p.nextFree()
	if err != nil {
		return netip.Addr{}, err
	}
	p.hold(a, owner)
	p.markTentative(a)
	return a, nil
}

// Reserve reserves addr for owner, tentatively: for a static request. It fails as Claim does — an
// error wrapping ErrOutOfRange, ErrReserved or ErrExcluded, or a *TakenError naming the holder —
// and is a no-op when owner already holds or has reserved addr.
func (p *Pool) Reserve(addr netip.Addr, owner Owner) error {
	return p.take(addr, owner, true)
}

// Confirm records that owner holds addr for certain: the record of truth says so. Whoever held or
// had reserved addr before, under another UID, is displaced and returned (zero Owner if nobody),
// because the record has decided. An address this pool can never hold is refused as Check refuses
// it, and nothing changes.
func (p *Pool) Confirm(addr netip.Addr, owner Owner) (displaced Owner, err error) {
	if owner.UID == "" {
		return Owner{}, fmt.Errorf("%w: confirming %s", errInvalidOwner, addr)
	}
	if err := p.def.check(addr); err != nil {
		return Owner{}, err
	}
	if h, ok := p.held[addr]; ok {
		if h.UID == owner.UID {
			delete(p.tentative, addr)
			return Owner{}, nil
		}
		displaced, _ = p.Release(addr)
	}
	p.hold(addr, owner)
	return displaced, nil
}

// Unreserve drops owner's reservation of addr and reports whether there was one. A confirmed hold,
// or another owner's reservation, is left alone: a worker whose attempt failed must not free what
// the record says is held, nor what another worker picked.
func (p *Pool) Unreserve(addr netip.Addr, owner Owner) bool {
	if _, ok := p.tentative[addr]; !ok {
		return false
	}
	if h := p.held[addr]; h.UID != owner.UID {
		return false
	}
	p.Release(addr)
	return true
}

// Held is the number of confirmed holds: the addresses held, reservations not counted.
func (p *Pool) Held() int { return len(p.held) - len(p.tentative) }

func (p *Pool) markTentative(a netip.Addr) {
	if p.tentative == nil {
		p.tentative = make(map[netip.Addr]struct{})
	}
	p.tentative[a] = struct{}{}
}
