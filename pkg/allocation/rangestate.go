package allocation

import (
	"fmt"
	"slices"

	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

// setRange (re)builds the pool of range name from its definition and the index: the range's own
// allocations are held by their owners, those of other ranges that this one could hand out are
// held as foreign. Own allocations the definition cannot hold (outside, excluded, reserved) are
// returned as orphans, sorted by address; they stay held in the index, and the range must say so.
// It runs when a range appears or its spec changes, never on allocation events, which the
// engine applies incrementally.
func (g *engine) setRange(name, cidr string, exclude []string) ([]ipam.Allocation, error) {
	p, err := ipam.NewPool(cidr, exclude)
	if err != nil {
		return nil, fmt.Errorf("range %s: %w", name, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var orphans []ipam.Allocation
	for addr, e := range g.idx.byRange[name] {
		if err := p.Claim(addr, e.owner); err != nil {
			orphans = append(orphans, ipam.Allocation{Addr: addr, Owner: e.owner})
		}
	}
	for addr, e := range g.idx.byAddr {
		if e.rng != name && p.Check(addr) == nil {
			_, _ = p.Confirm(addr, e.owner)
		}
	}
	slices.SortFunc(orphans, func(a, b ipam.Allocation) int { return a.Addr.Compare(b.Addr) })
	g.pools[name] = p
	return orphans, nil
}

// forgetRange drops the pool of a deleted range; its allocations stay indexed.
func (g *engine) forgetRange(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.pools, name)
}
