package allocation

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// Kept is an address retained for a guest cluster, as the index knew it when RetainedFor read it:
// what the guest pass judges, and the version its write is guarded by.
type Kept struct {
	Addr       netip.Addr
	Range      string
	Allocation string
	// Last is the FloatingIP that held it last.
	Last v1.FloatingIPReference
	// WhileServed: kept while the cluster's Services serve it (Keep); else the cluster's
	// retention after its deletion (Retain).
	WhileServed bool
	Until       time.Time
	ServedBy    string
	object      types.UID
	version     string
}

// RetainedFor returns the addresses retained for cluster, both kinds, lowest first: read from the
// index, with no API call.
func (m *Manager) RetainedFor(cluster v1.ClusterReference) []Kept {
	entries := m.g.ownedIn(retainedOwner(cluster).UID)
	out := make([]Kept, 0, len(entries))
	for _, e := range entries {
		if e.retained == nil {
			continue
		}
		out = append(out, Kept{Addr: e.addr(), Range: e.rng, Allocation: e.name,
			Last:        v1.FloatingIPReference{Namespace: e.last.Namespace, Name: e.last.Name, UID: types.UID(e.last.UID)},
			WhileServed: e.retained.whileServed, Until: e.retained.until, ServedBy: e.retained.servedBy,
			object: e.object, version: e.version})
	}
	slices.SortFunc(out, func(a, b Kept) int { return a.Addr.Compare(b.Addr) })
	return out
}

// ErrKeptChanged says the kept address's allocation changed since RetainedFor read it (taken
// back, renewed by another replica, released): nothing was written, and the next pass judges it
// again.
var ErrKeptChanged = errors.New("the kept address changed since it was read")

// Renew keeps k until then and records servedBy, the Services that serve it now: an update of
// the very version RetainedFor read, so that an address taken back or released meanwhile is left
// as it is (ErrKeptChanged).
func (m *Manager) Renew(k Kept, until time.Time, servedBy string) error {
	a, err := cachedAllocations{m.deps.Allocations}.Get(k.Allocation, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return ErrKeptChanged
	case err != nil:
		return fmt.Errorf("reading kept allocation %s: %w", k.Allocation, err)
	case a.UID != k.object || a.ResourceVersion != k.version || a.Spec.Retained == nil:
		return ErrKeptChanged
	}
	a = a.DeepCopy()
	r := *a.Spec.Retained
	r.Until, r.ServedBy = metav1.NewTime(until), servedBy
	setRetained(a, r)
	updated, err := m.deps.Allocations.Update(a)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return ErrKeptChanged
	}
	if err != nil {
		return fmt.Errorf("keeping %s for guest cluster %s/%s: %w", k.Addr, r.Cluster.Namespace, r.Cluster.Name, err)
	}
	m.g.apply(updated)
	return nil
}

// ReleaseKept releases k: a delete guarded by its UID and the version RetainedFor read, so that
// an address taken back or renewed meanwhile stays (ErrKeptChanged).
func (m *Manager) ReleaseKept(k Kept) error {
	e := allocEntry{name: k.Allocation, object: k.object}
	err := m.deleteAllocation(&e, k.version)
	if errors.Is(err, errChanged) {
		return ErrKeptChanged
	}
	if err != nil {
		return fmt.Errorf("releasing kept %s in FloatingIPRange %s: %w", k.Addr, k.Range, err)
	}
	return nil
}
