// Package allocation makes address claims atomic at the API server. A FloatingIPRange's status is
// the record of its allocations; an address is claimed by writing it there with the range's
// resourceVersion, so two workers, two operator replicas or a restarted operator can never hand the
// same address to two FloatingIPs. The ipam pools kept here are only a cache of those records, used
// to find the lowest free address without scanning; they are rebuilt from the range whenever the
// range changed behind this process's back.
package allocation

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net/netip"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

// ErrRangeNotFound: the FloatingIPRange does not exist.
var ErrRangeNotFound = errors.New("FloatingIPRange not found")

// maxConflicts bounds how often one claim re-reads a range another writer changed under it before
// giving up and letting the controller retry with backoff.
const maxConflicts = 8

// Manager claims and releases addresses. One Manager is shared by the range and FloatingIP
// controllers of one operator process.
type Manager struct {
	client kubefipcontrollers.FloatingIPRangeClient
	cache  kubefipcontrollers.FloatingIPRangeCache

	// normalized, when set, hears of every record rewritten in canonical spelling, after the write.
	normalized func(r *v1.FloatingIPRange, keys []string)

	mu     sync.Mutex
	ranges map[string]*rangeState
}

// OnNormalized sets what hears of record keys rewritten in canonical spelling (for an Event on the
// range). It is set once, before any claim.
func (m *Manager) OnNormalized(fn func(r *v1.FloatingIPRange, keys []string)) {
	m.normalized = fn
}

// rangeState is the cache of one range. Its lock serialises this process's claims on the range,
// which spares the API server pointless conflicts; other processes are kept out by resourceVersion.
type rangeState struct {
	mu   sync.Mutex
	view *View
	// written is the range as this manager last wrote it; chain holds the resourceVersions of
	// the unbroken series of its own writes that led there, and the version the first one was
	// written over. While the cache shows one of them, written is the newest known version: the
	// next claim starts from it rather than meeting a conflict on the cache's older copy.
	written *v1.FloatingIPRange
	chain   map[string]bool
}

// newest is r, or what this manager wrote over it when the cache still shows a version of its
// own series of writes.
func (s *rangeState) newest(r *v1.FloatingIPRange) *v1.FloatingIPRange {
	if s.written == nil || s.written.UID != r.UID || !s.chain[r.ResourceVersion] {
		return r
	}
	if r.ResourceVersion == s.written.ResourceVersion {
		s.chain = map[string]bool{r.ResourceVersion: true} // the cache caught up
		return r
	}
	return s.written
}

// wrote records a successful write of updated over base.
func (s *rangeState) wrote(base, updated *v1.FloatingIPRange) {
	if s.written == nil || !s.chain[base.ResourceVersion] || len(s.chain) > 1000 {
		s.chain = map[string]bool{base.ResourceVersion: true}
	}
	s.chain[updated.ResourceVersion] = true
	s.written = updated
}

// NewManager returns a Manager writing through client and reading through cache.
func NewManager(client kubefipcontrollers.FloatingIPRangeClient, cache kubefipcontrollers.FloatingIPRangeCache) *Manager {
	return &Manager{client: client, cache: cache, ranges: map[string]*rangeState{}}
}

func (m *Manager) state(name string) *rangeState {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.ranges[name]
	if !ok {
		s = &rangeState{}
		m.ranges[name] = s
	}
	return s
}

// Forget drops the cache of a deleted range.
func (m *Manager) Forget(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.ranges, name)
}

// Summary is what the range controller shows of a range.
type Summary struct {
	Capacity  *big.Int
	Used      int
	Available *big.Int
	// Problem keeps the range from handing out addresses; nil when it can.
	Problem *Problem
	Orphans []Orphan
	// Warnings are accepted but deserve a person's look: a range of the whole address space, a
	// range with nothing to hand out.
	Warnings []Problem
}

// Summarize returns the counts and the problem, if any, of r.
func (m *Manager) Summarize(r *v1.FloatingIPRange) Summary {
	s := m.state(r.Name)
	s.mu.Lock()
	defer s.mu.Unlock()
	view := m.viewLocked(s, r)
	capacity, used, available := view.Counts()
	return Summary{Capacity: capacity, Used: used, Available: available, Problem: m.problem(view, r), Orphans: view.Orphans(),
		Warnings: view.Warnings(r)}
}

// problem is the view's own problem or, failing that, an overlap with an older range.
func (m *Manager) problem(view *View, r *v1.FloatingIPRange) *Problem {
	if view.problem != nil {
		return view.problem
	}
	return overlap(r, view.pool, m.others(r.Name))
}

// viewLocked returns the cached view of r, rebuilt when r changed behind this process's back.
func (m *Manager) viewLocked(s *rangeState, r *v1.FloatingIPRange) *View {
	if s.view != nil && s.view.ResourceVersion == r.ResourceVersion && s.view.UID == r.UID {
		return s.view
	}
	s.view = NewView(r)
	return s.view
}

// others lists the other ranges, for the overlap check.
func (m *Manager) others(name string) []*v1.FloatingIPRange {
	all, err := m.cache.List(labelsEverything())
	if err != nil {
		return nil
	}
	out := make([]*v1.FloatingIPRange, 0, len(all))
	for _, r := range all {
		if r.Name != name {
			out = append(out, r)
		}
	}
	return out
}

// Claim makes owner hold an address of range rangeName: want when valid, else (want unset) the
// owner's existing address or the lowest free one. It returns the address and any other addresses
// the owner still holds in that range (the old one after a change of address), for the caller to
// release once its own object records the new one. The claim is in the range's status when Claim
// returns.
func (m *Manager) Claim(ctx context.Context, rangeName string, owner ipam.Owner, want netip.Addr) (netip.Addr, []netip.Addr, error) {
	var addr netip.Addr
	var others []netip.Addr
	err := m.change(ctx, rangeName, func(r *v1.FloatingIPRange, view *View) (*edit, error) {
		var changed bool
		var err error
		addr, others, changed, err = view.plan(owner, want, m.problem(view, r))
		if err != nil || !changed {
			return nil, err
		}
		return &edit{
			what:   "recording " + addr.String(),
			record: func(a map[string]v1.Allocation) { a[addr.String()] = allocationOf(owner) },
			pool:   func(p *ipam.Pool) { _ = p.Claim(addr, owner) },
		}, nil
	})
	if errors.Is(err, errNoRange) {
		return netip.Addr{}, nil, fmt.Errorf("%w: %s", ErrRangeNotFound, rangeName)
	}
	if err != nil {
		return netip.Addr{}, nil, err
	}
	return addr, others, nil
}

// Release removes the given addresses from range rangeName if, and only if, owner uid holds them
// there; with no addresses given, every address the owner holds. It returns what was released.
// Releasing what is not held is not an error, so a release happens exactly once however often it
// is retried.
func (m *Manager) Release(ctx context.Context, rangeName, uid string, addrs ...netip.Addr) ([]netip.Addr, error) {
	released, _, err := m.release(ctx, rangeName, uid, addrs)
	return released, err
}

// release removes uid's record keys for addrs (every key of uid when addrs is empty, including
// keys that name no address), and returns the addresses uid held and the keys removed.
func (m *Manager) release(ctx context.Context, rangeName, uid string, addrs []netip.Addr) ([]netip.Addr, []string, error) {
	var released []netip.Addr
	var keys []string
	err := m.change(ctx, rangeName, func(r *v1.FloatingIPRange, view *View) (*edit, error) {
		keys = keysOf(r.Status.Allocations, uid, addrs)
		released = nil
		for _, a := range view.HeldBy(uid) {
			if len(addrs) == 0 || containsAddr(addrs, a) {
				released = append(released, a)
			}
		}
		if len(keys) == 0 {
			return nil, nil
		}
		return &edit{
			what: fmt.Sprintf("releasing %v", released),
			record: func(a map[string]v1.Allocation) {
				for _, key := range keys {
					delete(a, key)
				}
			},
			pool: func(p *ipam.Pool) {
				for _, addr := range released {
					if o, ok := p.Holder(addr); ok && o.UID == uid {
						p.Release(addr)
					}
				}
			},
		}, nil
	})
	if errors.Is(err, errNoRange) {
		return nil, nil, nil
	}
	return released, keys, err
}

func containsAddr(addrs []netip.Addr, a netip.Addr) bool {
	for _, x := range addrs {
		if x.WithZone("").Unmap() == a {
			return true
		}
	}
	return false
}

// Normalize rewrites the record keys of range rangeName that spell an address in another way than
// the record does ("::FFFF", "fd00:0::1", "::ffff:10.0.0.1"), where that loses nothing, and returns
// the keys it rewrote. Keys it cannot rewrite stay, and the range's view flags them.
func (m *Manager) Normalize(ctx context.Context, rangeName string) ([]string, error) {
	var rewritten []string
	err := m.change(ctx, rangeName, func(r *v1.FloatingIPRange, _ *View) (*edit, error) {
		if !needsNormalising(r.Status.Allocations) {
			return nil, nil
		}
		// writeAllocations normalises every record it writes; this edit adds nothing to that.
		rewritten = normalise(maps.Clone(r.Status.Allocations))
		return &edit{what: "normalising the record", record: func(map[string]v1.Allocation) {}, pool: func(*ipam.Pool) {}}, nil
	})
	if errors.Is(err, errNoRange) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return rewritten, nil
}

// edit is one change of a range's record, and the same change of the cached pool.
type edit struct {
	what   string
	record func(map[string]v1.Allocation)
	pool   func(*ipam.Pool)
}

// errNoRange: the range does not exist; Claim and Release each say what that means for them.
var errNoRange = errors.New("no such range")

// change decides an edit of range rangeName with decide and writes it, guarded by the range's
// resourceVersion. It starts from the cache and, after a conflict — someone else wrote the range
// — decides again on the range read afresh from the API server. A nil edit writes nothing.
func (m *Manager) change(ctx context.Context, rangeName string, decide func(*v1.FloatingIPRange, *View) (*edit, error)) error {
	s := m.state(rangeName)
	s.mu.Lock()
	defer s.mu.Unlock()

	r, err := m.cache.Get(rangeName)
	if err == nil {
		r = s.newest(r)
	}
	for attempt := 0; ; attempt++ {
		if apierrors.IsNotFound(err) {
			return errNoRange
		}
		if err != nil {
			return err
		}
		view := m.viewLocked(s, r)
		e, derr := decide(r, view)
		if derr != nil || e == nil {
			return derr
		}
		updated, rewritten, werr := m.writeAllocations(ctx, r, view, e.record)
		if werr == nil {
			s.wrote(r, updated)
			if len(rewritten) > 0 && m.normalized != nil {
				m.normalized(updated, rewritten)
			}
			if view.index.irregular {
				// The write normalised the record: the pool is rebuilt from what was written
				// rather than patched, since keys moved or went.
				s.view = NewView(updated)
			} else {
				view.advance(updated, e.pool)
			}
			return nil
		}
		if !apierrors.IsConflict(werr) || attempt >= maxConflicts {
			return fmt.Errorf("%s in FloatingIPRange %s: %w", e.what, rangeName, werr)
		}
		// The loop's first checks see this read's error: a failed read is returned, never
		// decided on.
		r, err = m.client.Get(rangeName, metav1.GetOptions{})
	}
}

// writeAllocations writes r's status with its allocations changed by edit and the counts
// recomputed, guarded by r's resourceVersion.
// Every write also rewrites the record's keys in canonical spelling where it can; those keys are
// returned.
func (m *Manager) writeAllocations(_ context.Context, r *v1.FloatingIPRange, view *View, edit func(map[string]v1.Allocation)) (*v1.FloatingIPRange, []string, error) {
	r = r.DeepCopy()
	if r.Status.Allocations == nil {
		r.Status.Allocations = map[string]v1.Allocation{}
	}
	rewritten := normalise(r.Status.Allocations)
	edit(r.Status.Allocations)
	view.fillCounts(&r.Status)
	updated, err := m.client.UpdateStatus(r)
	return updated, rewritten, err
}

func allocationOf(o ipam.Owner) v1.Allocation {
	return v1.Allocation{Namespace: o.Namespace, Name: o.Name, UID: typesUID(o.UID)}
}

// HeldBy returns the addresses uid holds in range rangeName according to the cached range.
func (m *Manager) HeldBy(rangeName, uid string) []netip.Addr {
	r, err := m.cache.Get(rangeName)
	if err != nil {
		return nil
	}
	return indexRecord(r.Status.Allocations).heldBy(r.Status.Allocations, uid)
}
