package allocation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// RepairReport says what a repair pass changed.
type RepairReport struct {
	// Released are allocations whose FloatingIP no longer exists ("range/address ns/name").
	Released []string
	// Adopted are addresses held without an allocation object — in a range's legacy record, or
	// only in a FloatingIP — that now have one.
	Adopted []string
	// Renamed are allocations of a release before address spaces, named by their bare address,
	// now held by an object named for their space.
	Renamed []string
	// Expired are retained addresses whose retention ended.
	Expired []string
}

// Log writes what the report says.
func (r RepairReport) Log() {
	for _, x := range r.Released {
		logrus.Infof("repair: released %s, whose FloatingIP no longer exists", x)
	}
	for _, x := range r.Adopted {
		logrus.Infof("repair: recorded %s, held by a FloatingIP its range did not record", x)
	}
	for _, x := range r.Renamed {
		logrus.Infof("repair: %s is now named for its address space", x)
	}
	for _, x := range r.Expired {
		logrus.Infof("repair: released %s, whose retention ended", x)
	}
}

// candidate is an address some FloatingIP holds with no allocation object for it yet.
type candidate struct {
	addr    netip.Addr
	space   v1.AddressSpace
	rng     string
	owner   ipam.Owner
	created time.Time
	// record: from a range's legacy status.allocations, which was the record of truth and so
	// goes before what FloatingIPs only say they hold.
	record bool
}

// Repair makes the allocation objects agree with the FloatingIPs that exist, from the caches. It
// runs once before any worker starts — the migration from the ranges' legacy status.allocations
// and from the original operator's objects — and then periodically.
//
//   - Adopt: every address held without an object gets one, oldest holder first, so that of two
//     FloatingIPs naming one address the older keeps it and the later is flagged IPConflict by its
//     controller. A range's legacy record goes before what FloatingIPs say (it was the record);
//     an address moves nowhere.
//   - Empty the legacy records: entries now held by objects, and entries of FloatingIPs that are
//     gone, are removed; entries naming no address stay, flagged, until their holder is deleted.
//   - Reap: an allocation whose FloatingIP is gone, older than the grace period, is deleted.
//
// Two writers may race: the loser of a create sees AlreadyExists and moves on.
func (m *Manager) Repair(ctx context.Context) (RepairReport, error) {
	var report RepairReport
	ranges, err := m.deps.Ranges.Cache().List(labels.Everything())
	if err != nil {
		return report, err
	}
	fips, err := m.deps.FloatingIPs.Cache().List("", labels.Everything())
	if err != nil {
		return report, err
	}
	byUID := make(map[string]*v1.FloatingIP, len(fips))
	for _, f := range fips {
		byUID[string(f.UID)] = f
	}

	var cands []candidate
	for _, r := range ranges {
		idx := indexRecord(r.Status.Allocations)
		for addr, key := range idx.holder {
			a := r.Status.Allocations[key]
			if f := byUID[string(a.UID)]; f != nil {
				cands = append(cands, candidate{addr: addr, space: v1.SpaceOf(r), rng: r.Name, owner: OwnerOf(f), created: f.CreationTimestamp.Time, record: true})
			}
		}
	}
	for _, f := range fips {
		if c, ok := m.heldWithoutObject(f); ok {
			cands = append(cands, c)
		}
	}
	report.Adopted = m.adopt(ctx, cands)
	if err := ctx.Err(); err != nil {
		return report, err
	}
	report.Renamed = m.migrate(ctx)
	for _, r := range ranges {
		released, err := m.shrinkLegacy(r, byUID)
		report.Released = append(report.Released, released...)
		if err != nil {
			logrus.Warnf("repair: %v; tried again on the next pass", err)
		}
	}
	released, expired := m.reap(ctx)
	report.Released = append(report.Released, released...)
	report.Expired = expired
	return report, nil
}

// heldWithoutObject reads the address f holds, if any and if no allocation object records it:
// its status's, else its spec's (objects of the original operator carry only that).
func (m *Manager) heldWithoutObject(f *v1.FloatingIP) (candidate, bool) {
	rng := cmp.Or(f.Status.Range, f.Annotations[v1.AnnotationFloatingIPRange])
	address := cmp.Or(f.Status.IPAddress, f.Spec.IPAddress)
	if f.DeletionTimestamp != nil || rng == "" || address == "" {
		return candidate{}, false
	}
	addr, err := netip.ParseAddr(address)
	if err != nil {
		return candidate{}, false
	}
	addr = addr.WithZone("").Unmap()
	r, err := m.deps.Ranges.Cache().Get(rng)
	if err != nil {
		return candidate{}, false
	}
	// An object records it when f holds an address of the range, or anyone holds this one. The
	// engine's step is a claim's; the rest of the range's problem is read after it, outside the lock.
	check := m.g.checkClaim(r, Claimant{Owner: OwnerOf(f)}, addr, false)
	if check.holds || check.taken != nil || len(m.HeldBy(rng, string(f.UID))) > 0 {
		return candidate{}, false
	}
	// As a claim would: only an address the range can hand out, and an address only asked for
	// (not yet shown as held) only from a range that hands out addresses now.
	outline := check.view.outline
	if outline == nil || outline.Check(addr) != nil || f.Status.IPAddress == "" && m.problemOf(r, check.view) != nil {
		return candidate{}, false
	}
	return candidate{addr: addr, space: check.view.space, rng: rng, owner: OwnerOf(f), created: f.CreationTimestamp.Time}, true
}

// adopt creates an object for each candidate, the first of each address in order winning; it
// returns what it adopted. Addresses are independent, so they are created concurrently.
func (m *Manager) adopt(ctx context.Context, cands []candidate) []string {
	slices.SortStableFunc(cands, func(a, b candidate) int {
		if a.record != b.record {
			if a.record {
				return -1
			}
			return 1
		}
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return strings.Compare(a.owner.Namespace+"/"+a.owner.Name, b.owner.Namespace+"/"+b.owner.Name)
	})
	var (
		mu      sync.Mutex
		adopted []string
		workers errgroup.Group
	)
	workers.SetLimit(16)
	seen := map[slot]bool{}
	for _, c := range cands {
		s := slot{Addr: c.addr, Space: c.space.Hash()}
		if seen[s] {
			continue
		}
		seen[s] = true
		if ctx.Err() != nil {
			break
		}
		workers.Go(func() error {
			if m.adoptOne(c) {
				mu.Lock()
				adopted = append(adopted, fmt.Sprintf("%s/%s %s/%s", c.rng, c.addr, c.owner.Namespace, c.owner.Name))
				mu.Unlock()
			}
			return nil
		})
	}
	_ = workers.Wait()
	slices.Sort(adopted)
	return adopted
}

// adoptOne creates c's object unless the index already has one for its address.
func (m *Manager) adoptOne(c candidate) bool {
	if m.g.heldSlots([]slot{{Addr: c.addr, Space: c.space.Hash()}})[0] {
		return false
	}
	created, err := m.deps.Allocations.Create(newAllocation(c.space, c.addr, c.rng, c.owner))
	if err != nil {
		if !apierrors.IsAlreadyExists(err) {
			logrus.Warnf("repair: recording %s/%s for %s/%s: %v", c.rng, c.addr, c.owner.Namespace, c.owner.Name, err)
		}
		return false
	}
	m.g.apply(created)
	return true
}

// shrinkLegacy removes from r's legacy record every entry an allocation object now holds for the
// same owner, and every entry of a FloatingIP that is gone. It returns the entries of gone
// FloatingIPs it removed.
func (m *Manager) shrinkLegacy(r *v1.FloatingIPRange, byUID map[string]*v1.FloatingIP) ([]string, error) {
	if len(r.Status.Allocations) == 0 {
		return nil, nil
	}
	drop := map[string]types.UID{}
	var released []string
	idx := indexRecord(r.Status.Allocations)
	hash := v1.SpaceOf(r).Hash()
	keys := slices.Sorted(maps.Keys(r.Status.Allocations))
	// One engine step looks up every readable key's slot; the record is judged outside the lock.
	var slots []slot
	for _, key := range keys {
		if addr, ok := canonical(key); ok {
			slots = append(slots, slot{Addr: addr, Space: hash})
		}
	}
	held := m.g.heldSlots(slots)
	read := 0
	for _, key := range keys {
		a := r.Status.Allocations[key]
		addr, readable := canonical(key)
		byObject := false
		if readable {
			byObject = held[read]
			read++
		}
		if byUID[string(a.UID)] == nil {
			released = append(released, fmt.Sprintf("%s/%s %s/%s", r.Name, redact.Shorten(key, redact.MaxValue), a.Namespace, a.Name))
			drop[key] = a.UID
			continue
		}
		if readable && (byObject || idx.holder[addr] != key) {
			// Held by an object (its holder's or, for a loser, another's) or a second
			// spelling of an address: the object decides, the controller flags the loser.
			drop[key] = a.UID
		}
	}
	if len(drop) == 0 {
		return nil, nil
	}
	if err := m.dropRecordKeys(r, drop); err != nil {
		return nil, fmt.Errorf("emptying the legacy record of FloatingIPRange %s: %w", r.Name, err)
	}
	return released, nil
}

// reap deletes the allocations, older than the grace period, whose FloatingIP is gone: not in the
// cache, and not found (or found re-created, with another UID) when read afresh. A retained
// address has no FloatingIP: it is released once its retention ends.
func (m *Manager) reap(ctx context.Context) (released, expired []string) {
	now := time.Now()
	// The engine's step copies the holders; they are judged here, outside the lock, against the
	// FloatingIP cache.
	var suspects, ended []allocEntry
	for _, e := range m.g.holders() {
		switch {
		case e.retained != nil:
			if !now.Before(e.retained.until) {
				ended = append(ended, e)
			}
			continue
		case now.Sub(e.created) < m.opts.OrphanGracePeriod:
			continue
		}
		if owners, err := m.deps.FloatingIPs.Cache().GetByIndex(ByUIDIndex, e.owner.UID); err == nil && len(owners) > 0 {
			continue
		}
		suspects = append(suspects, e)
	}
	byAddr := func(a, b allocEntry) int { return a.addr().Compare(b.addr()) }
	slices.SortFunc(suspects, byAddr)
	slices.SortFunc(ended, byAddr)
	for i := range ended {
		if ctx.Err() != nil {
			break
		}
		e := &ended[i]
		// Guarded by the version judged: a retained address taken back meanwhile is the same
		// object, and must stay.
		if err := m.deleteAllocation(e, e.version); err != nil {
			if !errors.Is(err, errChanged) {
				logrus.Warnf("repair: releasing retained %s/%s: %v", e.rng, e.addr(), err)
			}
			continue
		}
		expired = append(expired, fmt.Sprintf("%s/%s %s/%s", e.rng, e.addr(), e.retained.cluster.Namespace, e.retained.cluster.Name))
	}
	for i := range suspects {
		if ctx.Err() != nil {
			break
		}
		e := &suspects[i]
		f, err := m.deps.FloatingIPs.Get(e.owner.Namespace, e.owner.Name, metav1.GetOptions{})
		switch {
		case err == nil && string(f.UID) == e.owner.UID:
			continue // the cache lags
		case err != nil && !apierrors.IsNotFound(err):
			logrus.Warnf("repair: reading FloatingIP %s/%s: %v", e.owner.Namespace, e.owner.Name, err)
			continue
		}
		if err := m.deleteAllocation(e, ""); err != nil {
			logrus.Warnf("repair: releasing %s/%s: %v", e.rng, e.addr(), err)
			continue
		}
		released = append(released, fmt.Sprintf("%s/%s %s/%s", e.rng, e.addr(), e.owner.Namespace, e.owner.Name))
	}
	return released, expired
}

// Run keeps the allocations true until ctx ends: every half grace period it reaps the allocations
// of gone FloatingIPs and lapses placeholders, and every auditEvery() it repeats the whole repair
// pass and then calls afterAudit.
func (m *Manager) Run(ctx context.Context, auditEvery func() time.Duration, afterAudit func()) {
	reap := time.NewTicker(max(m.opts.OrphanGracePeriod/2, time.Second))
	defer reap.Stop()
	audit := time.NewTimer(auditEvery())
	defer audit.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-reap.C:
			m.g.expirePlaceholders(time.Now())
			released, expired := m.reap(ctx)
			RepairReport{Released: released, Expired: expired}.Log()
		case <-audit.C:
			report, err := m.Repair(ctx)
			if err != nil {
				logrus.Warnf("allocation audit: %v", err)
			}
			report.Log()
			afterAudit()
			audit.Reset(auditEvery())
		}
	}
}

// Table renders every allocation, one a line by range and address, for traceIpamData.
func (m *Manager) Table() string {
	entries := m.g.entries(false)
	slices.SortFunc(entries, func(a, b allocEntry) int {
		if c := strings.Compare(a.rng, b.rng); c != 0 {
			return c
		}
		return a.addr().Compare(b.addr())
	})
	var b strings.Builder
	rng := ""
	for _, e := range entries {
		if e.rng != rng || b.Len() == 0 {
			rng = e.rng
			fmt.Fprintf(&b, "range %s:\n", rng)
		}
		switch {
		case e.retained != nil:
			fmt.Fprintf(&b, "  %s retained for %s/%s until %s (space %s)\n", e.addr(),
				e.retained.cluster.Namespace, e.retained.cluster.Name, e.retained.until.UTC().Format(time.RFC3339), e.slot.Space)
		default:
			fmt.Fprintf(&b, "  %s %s/%s uid=%s (space %s)\n", e.addr(), e.owner.Namespace, e.owner.Name, e.owner.UID, e.slot.Space)
		}
	}
	return b.String()
}

// OwnerOf is the FloatingIP as the holder of its addresses.
func OwnerOf(f *v1.FloatingIP) ipam.Owner {
	return ipam.Owner{Namespace: f.Namespace, Name: f.Name, UID: string(f.UID)}
}

// ClaimantOf is the FloatingIP as a claimant: its owner, and the provisioning cluster discovery
// created it for, whose retained address it may take back.
func ClaimantOf(f *v1.FloatingIP) Claimant {
	c := Claimant{Owner: OwnerOf(f)}
	c.Cluster, _ = v1.ProvisioningClusterOf(f)
	return c
}
