// Package allocation makes address claims atomic at the API server. Every held address is one
// cluster-scoped FloatingIPAllocation object named after the address and its address space (the
// Harvester cluster and network of its range): creating it is the claim, so the API server lets
// exactly one FloatingIP hold an address in a space whatever the number of workers, operator
// replicas or overlapping ranges; deleting it, guarded by its UID, is the release. An index fed by
// the objects' informer keeps one ipam pool per range, so that a claim finds the lowest free
// address without a scan, and workers reserve their picks in memory, so that they create different
// objects at the same time with no lock held across an API call.
package allocation

import (
	"cmp"
	"net/netip"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

// slot is an address in one address space, named by the space's hash: what one allocation holds.
type slot = v1.AllocationSlot

// allocEntry is one FloatingIPAllocation as the index knows it.
type allocEntry struct {
	name string
	slot slot // from the object's name, which the API server keeps unique
	// legacy: the name is the bare address of a release before address spaces; slot.Space was
	// taken from the range's space when the object was indexed.
	legacy bool
	object types.UID // the allocation's own UID: the precondition of its release
	// version is the object's resourceVersion as last seen: the precondition of releasing a
	// retained address whose time is up, which must not release it once it was taken back.
	version string
	rng     string
	space   v1.AddressSpace
	// owner holds the address: the FloatingIP, or for a retained address retainedOwner(cluster).
	owner ipam.Owner
	// last is the FloatingIP of spec.owner: the holder, or the last one of a retained address.
	last     ipam.Owner
	retained *retention
	created  time.Time
}

// retention is for whom and until when a retained address is kept; whileServed marks one kept
// while the cluster's Services may serve it, servedBy those that did at the last read.
type retention struct {
	cluster     v1.ClusterReference
	until       time.Time
	whileServed bool
	servedBy    string
}

func (e *allocEntry) addr() netip.Addr { return e.slot.Addr }

// retainedOwner stands for a provisioning cluster a retained address is kept for.
func retainedOwner(c v1.ClusterReference) ipam.Owner {
	return ipam.Owner{Namespace: c.Namespace, Name: c.Name, UID: retainedUIDPrefix + c.Namespace + "/" + c.Name}
}

const retainedUIDPrefix = "retained:"

// allocIndex is the in-memory copy of every FloatingIPAllocation, fed by the informer in its order
// and by the manager's own successful writes. Not safe for concurrent use: the engine's mutex
// guards it.
//
// Each slot has one holder: its only object, or, while two objects name one (space, address) — an
// object of an earlier release and its successor during the upgrade, or two releases that ran at
// once — the one created first. Only holders are in byOwner and byRange.
type allocIndex struct {
	byName  map[string]*allocEntry
	bySlot  map[slot][]*allocEntry // holder first
	byOwner map[string][]*allocEntry
	byRange map[string]map[slot]*allocEntry
	// bySpace lists the holders of each space, so that building a range's pool visits the
	// allocations of its own space only, never every allocation there is.
	bySpace map[string]map[slot]*allocEntry
	// legacy lists the entries named by a bare address (of a release before address spaces),
	// holders or not, for the repair to rename without walking every entry.
	legacy map[string]*allocEntry
	// spaces counts each range's holders by the space they hold in: a range whose annotations
	// changed while it held addresses holds them in its former space until they are released.
	spaces map[string]map[string]*spaceCount
	// retained counts each range's retained holders.
	retained map[string]int
	// perNamespace counts the addresses each range's holders in one namespace (one guest
	// cluster's FloatingIPs) hold, retained ones aside: what spec.maxAddressesPerCluster caps.
	perNamespace map[rangeNamespace]int
	// legacySpace tells the space hash of a range, for an object named by its bare address.
	legacySpace func(rangeName string) string
}

func newAllocIndex() allocIndex {
	return allocIndex{
		byName:   map[string]*allocEntry{},
		bySlot:   map[slot][]*allocEntry{},
		byOwner:  map[string][]*allocEntry{},
		byRange:  map[string]map[slot]*allocEntry{},
		bySpace:  map[string]map[slot]*allocEntry{},
		legacy:   map[string]*allocEntry{},
		spaces:   map[string]map[string]*spaceCount{},
		retained: map[string]int{},

		perNamespace: map[rangeNamespace]int{},
	}
}

// rangeNamespace keys allocIndex.perNamespace.
type rangeNamespace struct{ rng, namespace string }

// entryOf reads an allocation; nil for a name that is no address. The name, which the API server
// keeps unique, decides the slot: a spec that disagrees with it holds nothing of its own.
func (x *allocIndex) entryOf(a *v1.FloatingIPAllocation) *allocEntry {
	s, ok := v1.ParseAllocationName(a.Name)
	if !ok {
		return nil
	}
	e := &allocEntry{
		name:    a.Name,
		slot:    s,
		object:  a.UID,
		version: a.ResourceVersion,
		rng:     a.Spec.Range,
		space:   a.Spec.Space,
		last:    ipam.Owner{Namespace: a.Spec.Owner.Namespace, Name: a.Spec.Owner.Name, UID: string(a.Spec.Owner.UID)},
		created: a.CreationTimestamp.Time,
	}
	e.owner = e.last
	if r := a.Spec.Retained; r != nil {
		e.retained = &retention{cluster: r.Cluster, until: r.Until.Time, whileServed: r.WhileServed, servedBy: r.ServedBy}
		e.owner = retainedOwner(r.Cluster)
	}
	if s.Space == "" {
		e.legacy = true
		if x.legacySpace != nil {
			e.slot.Space = x.legacySpace(a.Spec.Range)
		} else {
			e.slot.Space = v1.AddressSpace{}.Hash()
		}
	}
	return e
}

// upsert indexes a, replacing what the index knew under its name. It returns the holder of a's
// slot before and after; changed is false when nothing the index keeps changed.
func (x *allocIndex) upsert(a *v1.FloatingIPAllocation) (before, after *allocEntry, changed bool) {
	e := x.entryOf(a)
	if e == nil {
		return nil, nil, false
	}
	if old := x.byName[a.Name]; old != nil {
		if same(old, e) {
			old.version = e.version
			return nil, nil, false
		}
		before = x.holder(old.slot)
		x.unlink(old)
	} else {
		before = x.holder(e.slot)
	}
	x.link(e)
	return before, x.holder(e.slot), true
}

// same reports whether two readings of one object name agree on everything the index keeps.
func same(a, b *allocEntry) bool {
	return a.object == b.object && a.slot == b.slot && a.rng == b.rng && a.owner == b.owner && a.last == b.last &&
		(a.retained == nil) == (b.retained == nil) && (a.retained == nil || *a.retained == *b.retained)
}

// remove drops the allocation named name if the index holds it under object; an empty object
// matches any (a tombstone without the final object). It returns the holder of its slot before and
// after, and whether anything was removed.
func (x *allocIndex) remove(name string, object types.UID) (before, after *allocEntry, removed bool) {
	e := x.byName[name]
	if e == nil || object != "" && e.object != object {
		return nil, nil, false
	}
	before = x.holder(e.slot)
	x.unlink(e)
	return before, x.holder(e.slot), true
}

// holder is the entry holding s, or nil.
func (x *allocIndex) holder(s slot) *allocEntry {
	if list := x.bySlot[s]; len(list) > 0 {
		return list[0]
	}
	return nil
}

// link adds e, keeping its slot's entries oldest first; the holder is listed by owner and range.
func (x *allocIndex) link(e *allocEntry) {
	prev := x.holder(e.slot)
	list := append(x.bySlot[e.slot], e)
	slices.SortStableFunc(list, func(a, b *allocEntry) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	x.bySlot[e.slot] = list
	x.byName[e.name] = e
	if e.legacy {
		x.legacy[e.name] = e
	}
	if now := list[0]; now != prev {
		if prev != nil {
			x.unlist(prev)
		}
		x.list(now)
	}
}

// unlink drops e; the next entry of its slot, if any, becomes the holder.
func (x *allocIndex) unlink(e *allocEntry) {
	delete(x.byName, e.name)
	if x.legacy[e.name] == e {
		delete(x.legacy, e.name)
	}
	list := x.bySlot[e.slot]
	i := slices.Index(list, e)
	if i < 0 {
		return
	}
	list = slices.Delete(list, i, i+1)
	if len(list) == 0 {
		delete(x.bySlot, e.slot)
	} else {
		x.bySlot[e.slot] = list
	}
	if i == 0 {
		x.unlist(e)
		if len(list) > 0 {
			x.list(list[0])
		}
	}
}

func (x *allocIndex) list(e *allocEntry) {
	x.byOwner[e.owner.UID] = append(x.byOwner[e.owner.UID], e)
	if x.byRange[e.rng] == nil {
		x.byRange[e.rng] = map[slot]*allocEntry{}
	}
	x.byRange[e.rng][e.slot] = e
	if x.bySpace[e.slot.Space] == nil {
		x.bySpace[e.slot.Space] = map[slot]*allocEntry{}
	}
	x.bySpace[e.slot.Space][e.slot] = e
	if x.spaces[e.rng] == nil {
		x.spaces[e.rng] = map[string]*spaceCount{}
	}
	c := x.spaces[e.rng][e.slot.Space]
	if c == nil {
		c = &spaceCount{}
		x.spaces[e.rng][e.slot.Space] = c
	}
	c.n++
	if !e.legacy || c.space == (v1.AddressSpace{}) {
		// The space as the object records it; a legacy object records none of its own.
		c.space = e.space
	}
	if e.retained != nil {
		x.retained[e.rng]++
	} else {
		x.perNamespace[rangeNamespace{e.rng, e.owner.Namespace}]++
	}
}

func (x *allocIndex) unlist(e *allocEntry) {
	owned := slices.DeleteFunc(x.byOwner[e.owner.UID], func(o *allocEntry) bool { return o == e })
	if len(owned) == 0 {
		delete(x.byOwner, e.owner.UID)
	} else {
		x.byOwner[e.owner.UID] = owned
	}
	if inRange := x.byRange[e.rng]; inRange != nil {
		delete(inRange, e.slot)
		if len(inRange) == 0 {
			delete(x.byRange, e.rng)
		}
	}
	if inSpace := x.bySpace[e.slot.Space]; inSpace != nil {
		delete(inSpace, e.slot)
		if len(inSpace) == 0 {
			delete(x.bySpace, e.slot.Space)
		}
	}
	if counts := x.spaces[e.rng]; counts != nil {
		if c := counts[e.slot.Space]; c != nil {
			if c.n--; c.n <= 0 {
				delete(counts, e.slot.Space)
			}
		}
		if len(counts) == 0 {
			delete(x.spaces, e.rng)
		}
	}
	if e.retained != nil {
		if x.retained[e.rng]--; x.retained[e.rng] <= 0 {
			delete(x.retained, e.rng)
		}
	} else {
		key := rangeNamespace{e.rng, e.owner.Namespace}
		if x.perNamespace[key]--; x.perNamespace[key] <= 0 {
			delete(x.perNamespace, key)
		}
	}
}

// heldBy returns the addresses uid holds in rng.
func (x *allocIndex) heldBy(uid, rng string) []netip.Addr {
	var out []netip.Addr
	for _, e := range x.byOwner[uid] {
		if e.rng == rng {
			out = append(out, e.addr())
		}
	}
	return out
}

// otherSpaces returns how many addresses rng holds in spaces other than hash.
func (x *allocIndex) otherSpaces(rng, hash string) (n int, space string) {
	for s, c := range x.spaces[rng] {
		if s != hash {
			n += c.n
			space = s
		}
	}
	return n, space
}

// spaceCount counts a range's holders in one space, and names the space as they record it.
type spaceCount struct {
	n     int
	space v1.AddressSpace
}

// spaceNamed is the space of hash as rng's allocations record it: one lookup.
func (x *allocIndex) spaceNamed(rng, hash string) v1.AddressSpace {
	if c := x.spaces[rng][hash]; c != nil {
		return c.space
	}
	return v1.AddressSpace{}
}

// deletedAllocation reads what an informer's delete notification carries: the object, or a
// tombstone with its key (the name, for a cluster-scoped kind) and maybe its last known state.
func deletedAllocation(obj interface{}) (name string, object types.UID, ok bool) {
	switch o := obj.(type) {
	case *v1.FloatingIPAllocation:
		return o.Name, o.UID, true
	case cache.DeletedFinalStateUnknown:
		if a, isAlloc := o.Obj.(*v1.FloatingIPAllocation); isAlloc {
			return a.Name, a.UID, true
		}
		return o.Key, "", o.Key != ""
	}
	return "", "", false
}
