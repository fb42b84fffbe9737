package ipam

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"

	"go4.org/netipx"
)

// ErrWithheld means the address is one something outside the operator hands out or uses on the
// range's network (a pool or a virtual machine of the Harvester cluster): the pool does not hand
// it out, dynamically or on request.
var ErrWithheld = errors.New("ipam: address claimed outside the operator")

// NewPoolWithheld is NewPool with the addresses of withheld never handed out: they are not free,
// and reserving one fails with ErrWithheld. What the record of truth already holds there stays
// held (Claim and Confirm accept it): a claim that comes later never moves an address already
// given. withheld may be nil, and may reach outside the range; only its part inside counts.
func NewPoolWithheld(cidr string, exclude []string, withheld *netipx.IPSet) (*Pool, error) {
	p, err := NewPool(cidr, exclude)
	if err != nil || withheld == nil {
		return p, err
	}
	var b netipx.IPSetBuilder
	b.AddSet(withheld)
	b.Intersect(p.def.avail)
	in, _ := b.IPSet()
	if len(in.Ranges()) == 0 {
		return p, nil
	}
	var free netipx.IPSetBuilder
	free.AddSet(p.def.avail)
	free.RemoveSet(in)
	rest, _ := free.IPSet()
	p.free = newFreeSet(rest.Ranges())
	p.withheld = in
	p.withheldFree = new(big.Int)
	for _, r := range in.Ranges() {
		p.withheldFree.Add(p.withheldFree, spanSize(r.From(), r.To()))
	}
	return p, nil
}

// isWithheld reports whether addr is withheld from this pool.
func (p *Pool) isWithheld(addr netip.Addr) bool {
	return p.withheld != nil && p.withheld.Contains(addr)
}

// withheldError is the reason a reservation of addr is refused, or nil.
func (p *Pool) withheldError(addr netip.Addr) error {
	if !p.isWithheld(addr) {
		return nil
	}
	return fmt.Errorf("%w: %s of %s", ErrWithheld, addr, p.def.prefix)
}

// Available is what the pool could still hand out: its capacity less every address held or
// reserved and every withheld address nobody here holds.
func (p *Pool) Available() *big.Int {
	n := new(big.Int).Sub(p.def.capacity, big.NewInt(int64(len(p.held))))
	if p.withheldFree != nil {
		n.Sub(n, p.withheldFree)
	}
	if n.Sign() < 0 {
		n.SetInt64(0)
	}
	return n
}

// Withheld counts the addresses the pool holds back for claims outside the operator, held ones
// not included.
func (p *Pool) Withheld() *big.Int {
	if p.withheldFree == nil {
		return new(big.Int)
	}
	return new(big.Int).Set(p.withheldFree)
}
