package allocation

import (
	"errors"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

// rangeState is what the engine keeps of one range: the pool built from its definition, fed by the
// index, and the range's own allocations the definition cannot hold.
type rangeState struct {
	uid  types.UID
	spec string
	// prefix is the range's CIDR, masked, under which engine.byPrefix lists it; invalid when
	// the definition is.
	prefix netip.Prefix
	// pool is nil when the definition is invalid; invalid then says why.
	pool    *ipam.Pool
	invalid error
	// orphans are the range's own allocations outside its definition (after a shrink or a new
	// exclude), with why. They stay held; the range says so and hands out nothing new.
	orphans map[netip.Addr]string
}

func specKey(r *v1.FloatingIPRange) string {
	return r.Spec.IPRange + "|" + strings.Join(r.Spec.Exclude, ",")
}

// stateLocked returns the state of r, (re)built when r is new to the engine, was re-created or its
// definition changed. Allocation events never rebuild it: the engine applies them incrementally.
func (g *engine) stateLocked(r *v1.FloatingIPRange) *rangeState {
	if st := g.ranges[r.Name]; st != nil && st.uid == r.UID && st.spec == specKey(r) {
		return st
	}
	st := g.buildLocked(r.Name, r.Spec.IPRange, r.Spec.Exclude)
	st.uid, st.spec = r.UID, specKey(r)
	return st
}

// buildLocked builds the state of range name from its definition and the index: the range's own
// allocations are held by their owners, those of other ranges that this one could hand out are
// held as foreign, so that no worker here tries them.
func (g *engine) buildLocked(name, cidr string, exclude []string) *rangeState {
	g.unlistLocked(name)
	st := &rangeState{orphans: map[netip.Addr]string{}}
	g.ranges[name] = st
	p, err := ipam.NewPool(cidr, exclude)
	if err != nil {
		st.invalid = err
		return st
	}
	st.pool = p
	if pfx, err := netip.ParsePrefix(cidr); err == nil {
		st.prefix = pfx.Masked()
		addTo(g.byPrefix, st.prefix, name)
	}
	for addr, e := range g.idx.byRange[name] {
		if err := p.Claim(addr, e.owner); err != nil {
			st.orphans[addr] = why(err)
		}
	}
	for addr, e := range g.idx.byAddr {
		if e.rng != name && p.Check(addr) == nil {
			_, _ = p.Confirm(addr, e.owner)
		}
	}
	return st
}

// orphanList returns the orphans of st, lowest address first.
func (st *rangeState) orphanList(idx *allocIndex, name string) []Orphan {
	out := make([]Orphan, 0, len(st.orphans))
	for addr, w := range st.orphans {
		o := Orphan{Addr: addr.String(), Why: w}
		if e := idx.byRange[name][addr]; e != nil {
			o.Allocation = v1.Allocation{Namespace: e.owner.Namespace, Name: e.owner.Name, UID: types.UID(e.owner.UID)}
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b Orphan) int {
		return netip.MustParseAddr(a.Addr).Compare(netip.MustParseAddr(b.Addr))
	})
	return out
}

// why says in a few words why a pool cannot hold an address.
func why(err error) string {
	switch {
	case errors.Is(err, ipam.ErrExcluded):
		return "excluded"
	case errors.Is(err, ipam.ErrReserved):
		return "a reserved address"
	case errors.Is(err, ipam.ErrOutOfRange):
		return "outside the range"
	}
	return err.Error()
}

// forgetRange drops the state of a deleted range; its allocations stay indexed.
func (g *engine) forgetRange(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unlistLocked(name)
	delete(g.ranges, name)
}

// unlistLocked takes range name out of byPrefix, under the prefix its current state has.
func (g *engine) unlistLocked(name string) {
	if st := g.ranges[name]; st != nil && st.prefix.IsValid() {
		dropFrom(g.byPrefix, st.prefix, name)
	}
}
