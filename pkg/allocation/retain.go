package allocation

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// Retain keeps every address the FloatingIP uid holds for the provisioning cluster until then,
// instead of releasing it: each allocation is updated in place, guarded by its resourceVersion, so
// that no moment leaves the address free. The next FloatingIP of that cluster in the same space
// takes it back (Claim); nobody else gets it until the time is up or the allocation is deleted.
// It returns the addresses retained; those the FloatingIP no longer holds are left alone, so that
// it can be retried.
func (m *Manager) Retain(ctx context.Context, uid string, cluster v1.ClusterReference, until time.Time) ([]netip.Addr, error) {
	return m.retain(ctx, m.g.ownedIn(uid), uid, v1.Retention{Cluster: cluster, Until: metav1.NewTime(until)})
}

// Keep is Release for an address the guest cluster of the FloatingIP uid may still serve: the
// addresses uid holds in range rangeName (all of them when none are given) are retained for the
// cluster while its Services serve them, until then at the latest, in place of their release. The
// guest pass releases each once it reads that no Service of the guest asks for or holds it
// (ReleaseKept), or pushes until on while one does (Renew). It returns the addresses kept.
func (m *Manager) Keep(ctx context.Context, rangeName, uid string, cluster v1.ClusterReference, until time.Time, addrs ...netip.Addr) ([]netip.Addr, error) {
	entries := slices.DeleteFunc(m.g.ownedIn(uid), func(e allocEntry) bool {
		return e.rng != rangeName || len(addrs) > 0 && !slices.Contains(addrs, e.addr())
	})
	return m.retain(ctx, entries, uid, v1.Retention{Cluster: cluster, Until: metav1.NewTime(until), WhileServed: true})
}

// retain makes entries, held by uid, retained as r says.
func (m *Manager) retain(ctx context.Context, entries []allocEntry, uid string, r v1.Retention) ([]netip.Addr, error) {
	slices.SortFunc(entries, func(a, b allocEntry) int { return a.addr().Compare(b.addr()) })
	var retained []netip.Addr
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return retained, err
		}
		a, err := cachedAllocations{m.deps.Allocations}.Get(e.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return retained, fmt.Errorf("reading allocation %s: %w", e.name, err)
		}
		if a.UID != e.object || string(a.Spec.Owner.UID) != uid || a.Spec.Retained != nil {
			continue
		}
		a = a.DeepCopy()
		setRetained(a, r)
		updated, err := m.deps.Allocations.Update(a)
		if err != nil {
			return retained, fmt.Errorf("retaining %s for guest cluster %s/%s: %w", e.addr(), r.Cluster.Namespace, r.Cluster.Name, err)
		}
		m.g.apply(updated)
		retained = append(retained, e.addr())
	}
	return retained, nil
}

// migrate gives every allocation of a release before address spaces, named by its bare address, a
// successor named for its range's space, with the same holder, and then deletes it: the successor
// exists before the old object goes, so the address is never free. It returns what it renamed.
func (m *Manager) migrate(ctx context.Context) []string {
	legacy := m.g.entries(true)
	slices.SortFunc(legacy, func(a, b allocEntry) int { return a.addr().Compare(b.addr()) })
	var renamed []string
	for i := range legacy {
		if ctx.Err() != nil {
			break
		}
		e := &legacy[i]
		space := v1.AddressSpace{}
		if r, err := m.deps.Ranges.Cache().Get(e.rng); err == nil {
			space = v1.SpaceOf(r)
		}
		next := newAllocation(space, e.addr(), e.rng, e.last)
		created, err := m.deps.Allocations.Create(next)
		switch {
		case err == nil:
			m.g.apply(created)
		case apierrors.IsAlreadyExists(err):
			existing, gerr := cachedAllocations{m.deps.Allocations}.Get(next.Name, metav1.GetOptions{})
			if gerr != nil || existing.Spec.Owner.UID != next.Spec.Owner.UID {
				// Another holder has the address in this space: the two releases ran at once.
				// The old object stays, and its FloatingIP is told of the conflict.
				logrus.Warnf("repair: %s of %s/%s cannot be named for its space: %s holds it there", e.name, e.last.Namespace, e.last.Name, next.Name)
				continue
			}
		default:
			logrus.Warnf("repair: naming %s for its address space: %v", e.name, err)
			continue
		}
		if err := m.deleteAllocation(e, ""); err != nil {
			logrus.Warnf("repair: deleting %s, now named %s: %v", e.name, next.Name, err)
			continue
		}
		renamed = append(renamed, fmt.Sprintf("%s/%s %s -> %s", e.rng, e.addr(), e.name, next.Name))
	}
	return renamed
}
