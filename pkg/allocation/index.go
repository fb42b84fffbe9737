package allocation

import (
	"fmt"
	"net/netip"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

// allocEntry is one FloatingIPAllocation as the index knows it.
type allocEntry struct {
	addr    netip.Addr // from the object's name, which the API server keeps unique
	object  types.UID  // the allocation's own UID: the precondition of its release
	rng     string
	owner   ipam.Owner
	created time.Time
}

// allocIndex is the in-memory copy of every FloatingIPAllocation, fed by the informer in its order
// and by the manager's own successful creates. Not safe for concurrent use: the engine's mutex
// guards it.
type allocIndex struct {
	byAddr  map[netip.Addr]*allocEntry
	byOwner map[string][]*allocEntry // by owner UID
	byRange map[string]map[netip.Addr]*allocEntry
	// odd names the objects that do not hold what they seem to: a name that is no address, or a
	// spec.address other than the name's. The first are not indexed, the second are (by name).
	odd map[string]string
}

func newAllocIndex() allocIndex {
	return allocIndex{
		byAddr:  map[netip.Addr]*allocEntry{},
		byOwner: map[string][]*allocEntry{},
		byRange: map[string]map[netip.Addr]*allocEntry{},
		odd:     map[string]string{},
	}
}

// entryOf reads an allocation. A name that is no address gives no entry; a spec.address that
// differs from the name's gives the name's entry and a reason to flag the object.
func entryOf(a *v1.FloatingIPAllocation) (*allocEntry, string) {
	addr, ok := v1.AddressOfAllocationName(a.Name)
	if !ok {
		return nil, fmt.Sprintf("the name %q is not an address as AllocationName writes it", a.Name)
	}
	e := &allocEntry{
		addr:    addr,
		object:  a.UID,
		rng:     a.Spec.Range,
		owner:   ipam.Owner{Namespace: a.Spec.Owner.Namespace, Name: a.Spec.Owner.Name, UID: string(a.Spec.Owner.UID)},
		created: a.CreationTimestamp.Time,
	}
	if spec, err := netip.ParseAddr(a.Spec.Address); err != nil || spec != addr {
		return e, fmt.Sprintf("spec.address %q is not the address %s its name holds", a.Spec.Address, addr)
	}
	return e, ""
}

// upsert indexes a, replacing an entry of the same address with another object UID (deleted and
// re-created unseen). It returns the entry now indexed and the one it replaced; changed is false
// when a was already indexed under its UID or gives no entry.
func (x *allocIndex) upsert(a *v1.FloatingIPAllocation) (e, replaced *allocEntry, changed bool) {
	e, why := entryOf(a)
	if why != "" {
		x.odd[a.Name] = why
	} else {
		delete(x.odd, a.Name)
	}
	if e == nil {
		return nil, nil, false
	}
	if old := x.byAddr[e.addr]; old != nil {
		if old.object == e.object {
			return old, nil, false
		}
		x.drop(old)
		replaced = old
	}
	x.byAddr[e.addr] = e
	x.byOwner[e.owner.UID] = append(x.byOwner[e.owner.UID], e)
	if x.byRange[e.rng] == nil {
		x.byRange[e.rng] = map[netip.Addr]*allocEntry{}
	}
	x.byRange[e.rng][e.addr] = e
	return e, replaced, true
}

// remove drops the allocation named name if the index holds it under object; an empty object
// matches any (a tombstone without the final object). It returns the entry removed.
func (x *allocIndex) remove(name string, object types.UID) *allocEntry {
	addr, ok := v1.AddressOfAllocationName(name)
	if !ok {
		delete(x.odd, name)
		return nil
	}
	e := x.byAddr[addr]
	if e == nil || object != "" && e.object != object {
		return nil
	}
	delete(x.odd, name)
	x.drop(e)
	return e
}

func (x *allocIndex) drop(e *allocEntry) {
	delete(x.byAddr, e.addr)
	owned := x.byOwner[e.owner.UID]
	for i, o := range owned {
		if o == e {
			owned = append(owned[:i:i], owned[i+1:]...)
			break
		}
	}
	if len(owned) == 0 {
		delete(x.byOwner, e.owner.UID)
	} else {
		x.byOwner[e.owner.UID] = owned
	}
	if inRange := x.byRange[e.rng]; inRange != nil {
		delete(inRange, e.addr)
		if len(inRange) == 0 {
			delete(x.byRange, e.rng)
		}
	}
}

// heldBy returns the addresses uid holds in rng.
func (x *allocIndex) heldBy(uid, rng string) []netip.Addr {
	var out []netip.Addr
	for _, e := range x.byOwner[uid] {
		if e.rng == rng {
			out = append(out, e.addr)
		}
	}
	return out
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
