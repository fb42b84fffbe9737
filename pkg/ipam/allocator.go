package ipam

import (
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"sync"
)

// Allocator is a set of named pools, one per range object, safe for
// concurrent use. A single mutex guards all pools: every operation is
// microseconds long, and one lock keeps cross-pool operations such as
// ReleaseOwner atomic without lock-ordering rules.
//
// The zero value is ready to use.
type Allocator struct {
	mu    sync.Mutex
	pools map[string]*Pool
}

// NewAllocator returns an empty Allocator.
func NewAllocator() *Allocator { return &Allocator{} }

func (al *Allocator) pool(name string) (*Pool, error) {
	p, ok := al.pools[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrPoolNotFound, Quote(name))
	}
	return p, nil
}

// SetPool creates the named pool or, if it exists, resizes it with the
// semantics of Pool.Resize: on ErrWouldOrphan nothing changes and the
// orphaned allocations are returned.
func (al *Allocator) SetPool(name, cidr string, exclude []string) ([]Allocation, error) {
	al.mu.Lock()
	defer al.mu.Unlock()
	if p, ok := al.pools[name]; ok {
		orphans, err := p.Resize(cidr, exclude)
		if err != nil {
			return orphans, fmt.Errorf("pool %s: %w", Quote(name), err)
		}
		return nil, nil
	}
	p, err := NewPool(cidr, exclude)
	if err != nil {
		return nil, fmt.Errorf("pool %s: %w", Quote(name), err)
	}
	if al.pools == nil {
		al.pools = make(map[string]*Pool)
	}
	al.pools[name] = p
	return nil, nil
}

// DeletePool forgets the named pool and returns the allocations it still
// held, so the caller can log or clean up what it just dropped.
func (al *Allocator) DeletePool(name string) ([]Allocation, bool) {
	al.mu.Lock()
	defer al.mu.Unlock()
	p, ok := al.pools[name]
	if !ok {
		return nil, false
	}
	delete(al.pools, name)
	return p.Allocations(), true
}

// Pool returns a deep copy of the named pool. The copy costs O(allocations)
// and is detached: changing it does not affect the Allocator.
func (al *Allocator) Pool(name string) (*Pool, bool) {
	al.mu.Lock()
	defer al.mu.Unlock()
	p, ok := al.pools[name]
	if !ok {
		return nil, false
	}
	return p.Clone(), true
}

// Names returns the pool names, sorted.
func (al *Allocator) Names() []string {
	al.mu.Lock()
	defer al.mu.Unlock()
	return al.namesLocked()
}

func (al *Allocator) namesLocked() []string {
	names := make([]string, 0, len(al.pools))
	for n := range al.pools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Conflicts returns the names, sorted, of pools other than except that could
// hand out an address p could. Build p with NewPool to vet a range before
// SetPool.
func (al *Allocator) Conflicts(p *Pool, except string) []string {
	al.mu.Lock()
	defer al.mu.Unlock()
	var out []string
	for _, n := range al.namesLocked() {
		if n != except && al.pools[n].Overlaps(p) {
			out = append(out, n)
		}
	}
	return out
}

// Check is Pool.Check on the named pool.
func (al *Allocator) Check(rangeName string, addr netip.Addr) error {
	al.mu.Lock()
	defer al.mu.Unlock()
	p, err := al.pool(rangeName)
	if err != nil {
		return err
	}
	return p.Check(addr)
}

// Claim is Pool.Claim on the named pool.
func (al *Allocator) Claim(rangeName string, addr netip.Addr, owner Owner) error {
	al.mu.Lock()
	defer al.mu.Unlock()
	p, err := al.pool(rangeName)
	if err != nil {
		return err
	}
	return p.Claim(addr, owner)
}

// AllocateNext is Pool.AllocateNext on the named pool.
func (al *Allocator) AllocateNext(rangeName string, owner Owner) (netip.Addr, error) {
	al.mu.Lock()
	defer al.mu.Unlock()
	p, err := al.pool(rangeName)
	if err != nil {
		return netip.Addr{}, err
	}
	return p.AllocateNext(owner)
}

// NextFree is Pool.NextFree on the named pool. The answer is advisory: by
// the time the caller Claims it another goroutine may have, in which case
// Claim reports ErrTaken and the caller retries.
func (al *Allocator) NextFree(rangeName string) (netip.Addr, error) {
	al.mu.Lock()
	defer al.mu.Unlock()
	p, err := al.pool(rangeName)
	if err != nil {
		return netip.Addr{}, err
	}
	return p.NextFree()
}

// Release is Pool.Release on the named pool; an unknown pool holds nothing.
func (al *Allocator) Release(rangeName string, addr netip.Addr) (Owner, bool) {
	al.mu.Lock()
	defer al.mu.Unlock()
	p, ok := al.pools[rangeName]
	if !ok {
		return Owner{}, false
	}
	return p.Release(addr)
}

// ReleaseOwner frees everything uid holds in every pool, for when a
// FloatingIP is deleted and its range is no longer known. The result is
// sorted by range, then address.
func (al *Allocator) ReleaseOwner(uid string) []Row {
	al.mu.Lock()
	defer al.mu.Unlock()
	var out []Row
	for _, n := range al.namesLocked() {
		p := al.pools[n]
		for _, a := range p.AddressesOf(uid) {
			o, _ := p.Release(a)
			out = append(out, Row{Range: n, Addr: a, Owner: o})
		}
	}
	return out
}

// Holder is Pool.Holder on the named pool.
func (al *Allocator) Holder(rangeName string, addr netip.Addr) (Owner, bool) {
	al.mu.Lock()
	defer al.mu.Unlock()
	p, ok := al.pools[rangeName]
	if !ok {
		return Owner{}, false
	}
	return p.Holder(addr)
}

// AddressOf is Pool.AddressOf on the named pool.
func (al *Allocator) AddressOf(rangeName, uid string) (netip.Addr, bool) {
	al.mu.Lock()
	defer al.mu.Unlock()
	p, ok := al.pools[rangeName]
	if !ok {
		return netip.Addr{}, false
	}
	return p.AddressOf(uid)
}

// Allocations is Pool.Allocations on the named pool.
func (al *Allocator) Allocations(rangeName string) ([]Allocation, error) {
	al.mu.Lock()
	defer al.mu.Unlock()
	p, err := al.pool(rangeName)
	if err != nil {
		return nil, err
	}
	return p.Allocations(), nil
}

// Stats returns the named pool's capacity, used and available counts, read
// under one lock so they are mutually consistent, for status and metrics.
func (al *Allocator) Stats(rangeName string) (capacity *big.Int, used int, available *big.Int, err error) {
	al.mu.Lock()
	defer al.mu.Unlock()
	p, err := al.pool(rangeName)
	if err != nil {
		return nil, 0, nil, err
	}
	return p.Capacity(), p.Used(), p.Available(), nil
}
