package allocation

import (
	"errors"
	"net/netip"
	"slices"
	"strings"

	"go4.org/netipx"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

// rangeState is what the engine keeps of one range: the pool built from its definition, fed by the
// index, and the range's own allocations the definition cannot hold.
type rangeState struct {
	uid  types.UID
	spec string
	// space is the range's address space, as its annotations say; hash is its Hash.
	space v1.AddressSpace
	hash  string
	// prefix is the range's CIDR, masked, under which engine.byPrefix lists it; invalid when
	// the definition is.
	prefix netip.Prefix
	// pool is nil when the definition is invalid; invalid then says why.
	pool    *ipam.Pool
	invalid error
	// orphans are the range's own allocations outside its definition (after a shrink or a new
	// exclude), with why and the space they are held in. They stay held; the range says so and
	// hands out nothing new.
	orphans map[netip.Addr]orphanNote
	// obj is the range object last read.
	obj *v1.FloatingIPRange
	// limit is the range's spec.maxAddressesPerCluster as last read (0: none); pending counts,
	// by namespace, the new addresses reserved by claims that have not created their objects yet,
	// so that two workers of one guest cluster's FloatingIPs cannot both pass the limit.
	limit   int32
	pending map[string]int
	// withheldKey is the key of the withholding the pool was built with.
	withheldKey string
}

// withholding is a set of addresses withheld from a range's pool, and its key: the set's runs as
// text, which compares two withholdings without comparing sets.
type withholding struct {
	set *netipx.IPSet
	key string
}

// withholdingOf makes the withholding of set; nil or empty withholds nothing.
func withholdingOf(set *netipx.IPSet) withholding {
	if set == nil || len(set.Ranges()) == 0 {
		return withholding{}
	}
	runs := make([]string, 0, len(set.Ranges()))
	for _, r := range set.Ranges() {
		runs = append(runs, r.String())
	}
	return withholding{set: set, key: strings.Join(runs, ",")}
}

// withhold makes range name's pool hand out nothing of set from now on, and reports whether that
// changed anything. The range's state is built again at its next use: what its allocations hold
// stays held.
func (g *engine) withhold(name string, set *netipx.IPSet) bool {
	w := withholdingOf(set)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.withheld[name].key == w.key {
		return false
	}
	if w.key == "" {
		delete(g.withheld, name)
	} else {
		g.withheld[name] = w
	}
	if st := g.ranges[name]; st != nil {
		// Not the object last read: stateLocked compares the withholding and builds again.
		st.obj = nil
	}
	g.notifyLocked(name)
	return true
}

// orphanNote is why a range's allocation is an orphan, and the space of its slot, under which the
// range's index finds its holder without a walk.
type orphanNote struct {
	why   string
	space string
}

// specKey is everything of r a pool is built from: its CIDR, its excludes and its space.
func specKey(r *v1.FloatingIPRange) string {
	return r.Spec.IPRange + "|" + strings.Join(r.Spec.Exclude, ",") + "|" + v1.SpaceOf(r).Hash()
}

// stateLocked returns the state of r, (re)built when r is new to the engine, was re-created or its
// definition changed. Allocation events never rebuild it: the engine applies them incrementally.
// A rebuild, under the caller's lock section, costs the allocations of r's own space (buildLocked).
func (g *engine) stateLocked(r *v1.FloatingIPRange) *rangeState {
	st := g.ranges[r.Name]
	if st != nil && st.obj == r {
		// The very object read last time: informer objects never change, so neither did
		// its definition. Selection reads every range of a space this way, without the cost
		// of specKey.
		return st
	}
	if st == nil || st.uid != r.UID || st.spec != specKey(r) || st.withheldKey != g.withheld[r.Name].key {
		st = g.buildLocked(r.Name, v1.SpaceOf(r), r.Spec.IPRange, r.Spec.Exclude)
		st.uid, st.spec = r.UID, specKey(r)
		// A new pool may have room a space's selection found none in before.
		g.freed[st.hash]++
	}
	st.obj, st.limit = r, r.Spec.MaxAddressesPerCluster
	return st
}

// atLimitLocked reports whether the FloatingIPs of namespace hold, or are about to hold, as many
// of st's addresses as its limit allows.
func (g *engine) atLimitLocked(rng string, st *rangeState, namespace string) bool {
	return st.limit > 0 && g.idx.perNamespace[rangeNamespace{rng, namespace}]+st.pending[namespace] >= int(st.limit)
}

// buildLocked builds the state of range name from its definition and the index: the range's own
// allocations are held by their owners, those of other ranges of its space that this one could
// hand out are held as foreign, so that no worker here tries them.
func (g *engine) buildLocked(name string, space v1.AddressSpace, cidr string, exclude []string) *rangeState {
	g.unlistLocked(name)
	w := g.withheld[name]
	st := &rangeState{space: space, hash: space.Hash(), orphans: map[netip.Addr]orphanNote{}, pending: map[string]int{}, withheldKey: w.key}
	g.ranges[name] = st
	p, err := ipam.NewPoolWithheld(cidr, exclude, w.set)
	if err != nil {
		st.invalid = err
		return st
	}
	st.pool = p
	if pfx, err := netip.ParsePrefix(cidr); err == nil {
		st.prefix = pfx.Masked()
		g.byPrefix.add(spacePrefix{space: st.hash, prefix: st.prefix}, name)
	}
	for _, e := range g.idx.byRange[name] {
		if err := p.Claim(e.addr(), e.owner); err != nil {
			st.orphans[e.addr()] = orphanNote{why: why(err), space: e.slot.Space}
		}
	}
	// The holders of the range's own space only: a rebuild (a new or edited range) costs the
	// allocations of its space, not every allocation the engine knows.
	for s, e := range g.idx.bySpace[st.hash] {
		if e.rng != name && p.Check(s.Addr) == nil {
			_, _ = p.Confirm(s.Addr, e.owner)
		}
	}
	return st
}

// orphanList returns the orphans of st, lowest address first: one lookup per orphan.
func (st *rangeState) orphanList(idx *allocIndex, name string) []Orphan {
	out := make([]Orphan, 0, len(st.orphans))
	for addr, note := range st.orphans {
		o := Orphan{Addr: addr.String(), Why: note.why}
		if e := idx.byRange[name][slot{Addr: addr, Space: note.space}]; e != nil {
			o.Allocation = holderOf(e)
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b Orphan) int {
		return netip.MustParseAddr(a.Addr).Compare(netip.MustParseAddr(b.Addr))
	})
	return out
}

// holderOf names e's holder for a message: the FloatingIP, or the cluster a retained address is
// kept for.
func holderOf(e *allocEntry) v1.Allocation {
	if e.retained != nil {
		return v1.Allocation{Namespace: e.retained.cluster.Namespace, Name: e.retained.cluster.Name + " (retained)"}
	}
	return v1.Allocation{Namespace: e.owner.Namespace, Name: e.owner.Name, UID: types.UID(e.owner.UID)}
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
	delete(g.withheld, name)
}

// unlistLocked takes range name out of byPrefix, under the prefix its current state has.
func (g *engine) unlistLocked(name string) {
	if st := g.ranges[name]; st != nil && st.prefix.IsValid() {
		g.byPrefix.drop(spacePrefix{space: st.hash, prefix: st.prefix}, name)
	}
}

// spacePrefix is a prefix within one address space, by the space's hash.
type spacePrefix struct {
	space  string
	prefix netip.Prefix
}

// prefixSets lists range names under space prefixes.
type prefixSets map[spacePrefix]map[string]struct{}

func (m prefixSets) add(key spacePrefix, name string) {
	set, ok := m[key]
	if !ok {
		set = map[string]struct{}{}
		m[key] = set
	}
	set[name] = struct{}{}
}

func (m prefixSets) drop(key spacePrefix, name string) {
	delete(m[key], name)
	if len(m[key]) == 0 {
		delete(m, key)
	}
}
