package allocation

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

// Reasons a range cannot hand out addresses, used as its Ready condition's reason.
const (
	ReasonInvalidRange        = "InvalidRange"
	ReasonOverlap             = "Overlap"
	ReasonOrphanedAllocations = "OrphanedAllocations"
)

// Reasons of the Warning condition of a range that is valid but almost certainly not what was
// meant.
const (
	// ReasonWholeAddressSpace: spec.iprange is 0.0.0.0/0 or ::/0, every address there is.
	ReasonWholeAddressSpace = "WholeAddressSpace"
	// ReasonNoCapacity: the excludes (or a prefix with only reserved addresses) leave nothing to
	// hand out.
	ReasonNoCapacity = "NoCapacity"
)

// Problem says why a range cannot hand out addresses now.
type Problem struct {
	Reason  string
	Message string
}

// NotReadyError is returned for a claim on a range with a Problem.
type NotReadyError struct {
	Range   string
	Problem Problem
}

func (e *NotReadyError) Error() string {
	return fmt.Sprintf("FloatingIPRange %s cannot hand out addresses (%s): %s", e.Range, e.Problem.Reason, e.Problem.Message)
}

// Orphan is a recorded allocation the range's spec does not cover (after a shrink or a new
// exclude) or that is recorded twice. It is kept, never dropped, and flagged.
type Orphan struct {
	Addr       string
	Allocation v1.Allocation
	Why        string
}

// View is the allocation state of one range at one resourceVersion: its pool built from the spec
// and the recorded allocations, and what, if anything, keeps it from handing out addresses.
type View struct {
	Name            string
	UID             types.UID
	ResourceVersion string

	pool    *ipam.Pool // nil when the spec is invalid
	record  map[string]v1.Allocation
	index   recordIndex
	problem *Problem
	orphans []Orphan
}

// NewView builds the view of r from its spec and its record.
func NewView(r *v1.FloatingIPRange) *View {
	v := &View{Name: r.Name, UID: r.UID, ResourceVersion: r.ResourceVersion, record: r.Status.Allocations}
	v.index = indexRecord(v.record)
	pool, err := ipam.NewPool(r.Spec.IPRange, r.Spec.Exclude)
	if err != nil {
		v.problem = &Problem{Reason: ReasonInvalidRange, Message: err.Error()}
		return v
	}
	v.pool = pool

	for _, key := range v.index.unreadable {
		v.orphans = append(v.orphans, Orphan{Addr: ipam.Clip(key), Allocation: v.record[key], Why: "not an address"})
	}
	for _, key := range v.index.losers {
		v.orphans = append(v.orphans, Orphan{Addr: ipam.Clip(key), Allocation: v.record[key], Why: "recorded twice, in two spellings"})
	}
	addrs := make([]netip.Addr, 0, len(v.index.holder))
	for addr := range v.index.holder {
		addrs = append(addrs, addr)
	}
	sort.Slice(addrs, func(i, j int) bool { return addrs[i].Less(addrs[j]) })
	for _, addr := range addrs {
		key := v.index.holder[addr]
		a := v.record[key]
		if err := pool.Claim(addr, ownerOf(a)); err != nil {
			v.orphans = append(v.orphans, Orphan{Addr: ipam.Clip(key), Allocation: a, Why: reasonText(err)})
		}
	}
	sort.Slice(v.orphans, func(i, j int) bool { return v.orphans[i].Addr < v.orphans[j].Addr })
	if len(v.orphans) > 0 {
		v.problem = &Problem{Reason: ReasonOrphanedAllocations, Message: orphanMessage(r, v.orphans)}
	}
	return v
}

// overlap returns the problem of r overlapping an older range among others, or nil. It is checked
// on every use rather than cached in the view, since it changes when another range changes.
func overlap(r *v1.FloatingIPRange, pool *ipam.Pool, others []*v1.FloatingIPRange) *Problem {
	if pool == nil {
		return nil
	}
	for _, o := range others {
		if !younger(r, o) {
			continue
		}
		op, err := ipam.NewPool(o.Spec.IPRange, o.Spec.Exclude)
		if err != nil || !pool.Overlaps(op) {
			continue
		}
		return &Problem{Reason: ReasonOverlap, Message: fmt.Sprintf(
			"%s overlaps FloatingIPRange %s (%s), which is older: change one of them so that no address is in both", r.Spec.IPRange, o.Name, o.Spec.IPRange)}
	}
	return nil
}

// younger reports whether a was created after b (by name when at the same second), so that of two
// overlapping ranges the newer one is the one flagged.
func younger(a, b *v1.FloatingIPRange) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name > b.Name
}

func orphanMessage(r *v1.FloatingIPRange, orphans []Orphan) string {
	parts := make([]string, 0, len(orphans))
	for i, o := range orphans {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(orphans)-10))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s/%s: %s)", o.Addr, ipam.Clip(o.Allocation.Namespace), ipam.Clip(o.Allocation.Name), o.Why))
	}
	return fmt.Sprintf("spec.iprange %s with its excludes no longer covers allocated addresses %s; nothing was dropped and no new address is handed out until those FloatingIPs are moved or deleted, or the edit is reverted",
		r.Spec.IPRange, strings.Join(parts, ", "))
}

func reasonText(err error) string {
	var taken *ipam.TakenError
	switch {
	case errors.As(err, &taken):
		return "recorded twice"
	case errors.Is(err, ipam.ErrExcluded):
		return "excluded"
	case errors.Is(err, ipam.ErrReserved):
		return "a reserved address"
	case errors.Is(err, ipam.ErrOutOfRange):
		return "outside the range"
	}
	return err.Error()
}

// Warnings returns what is accepted in the range's spec but deserves a person's look.
func (v *View) Warnings(r *v1.FloatingIPRange) []Problem {
	if v.pool == nil {
		return nil
	}
	var out []Problem
	if pfx := v.pool.Prefix(); pfx.Bits() == 0 {
		fam := "IPv4"
		if pfx.Addr().Is6() {
			fam = "IPv6"
		}
		out = append(out, Problem{Reason: ReasonWholeAddressSpace, Message: fmt.Sprintf(
			"spec.iprange %s is the whole %s address space: any address, public ones included, may be handed out; a range is normally the subnet of one VM network", pfx, fam)})
	}
	if v.pool.Capacity().Sign() == 0 {
		out = append(out, Problem{Reason: ReasonNoCapacity, Message: fmt.Sprintf(
			"spec.iprange %s with its %d excludes leaves no address to hand out; FloatingIPs of this range stay pending", v.pool.Prefix(), len(r.Spec.Exclude))})
	}
	return out
}

// Orphans returns the recorded allocations the spec does not cover.
func (v *View) Orphans() []Orphan { return append([]Orphan(nil), v.orphans...) }

// Counts returns the capacity, the number of recorded allocations and the free addresses.
func (v *View) Counts() (capacity *big.Int, used int, available *big.Int) {
	capacity = new(big.Int)
	if v.pool != nil {
		capacity.Set(v.pool.Capacity())
	}
	used = len(v.record)
	available = new(big.Int).Sub(capacity, big.NewInt(int64(used-len(v.orphans))))
	if available.Sign() < 0 {
		available.SetInt64(0)
	}
	return capacity, used, available
}

// Holder returns who holds addr according to the range's record, whatever spelling it is
// recorded in.
func (v *View) Holder(addr netip.Addr) (v1.Allocation, bool) {
	key, ok := v.index.holder[addr.WithZone("").Unmap()]
	if !ok {
		return v1.Allocation{}, false
	}
	return v.record[key], true
}

// HeldBy returns the addresses uid holds in the range's record, lowest first. An address recorded
// twice is held only by the key that wins (see recordIndex).
func (v *View) HeldBy(uid string) []netip.Addr {
	return v.index.heldBy(v.record, uid)
}

// plan decides a claim: the address owner gets, the other addresses it holds, and whether the
// record must change. Holding an address stays valid even when the range has a problem; only new
// claims are refused.
func (v *View) plan(owner ipam.Owner, want netip.Addr, problem *Problem) (netip.Addr, []netip.Addr, bool, error) {
	held := v.HeldBy(owner.UID)
	if !want.IsValid() {
		if len(held) > 0 {
			return held[0], held[1:], false, nil
		}
	} else if a, ok := v.Holder(want); ok {
		if string(a.UID) == owner.UID {
			return want, without(held, want), false, nil
		}
		return netip.Addr{}, nil, false, &ipam.TakenError{Addr: want, Holder: ownerOf(a)}
	}
	if problem != nil {
		return netip.Addr{}, nil, false, &NotReadyError{Range: v.Name, Problem: *problem}
	}
	if !want.IsValid() {
		next, err := v.pool.NextFree()
		return next, nil, err == nil, err
	}
	if err := v.pool.Check(want); err != nil {
		return netip.Addr{}, nil, false, err
	}
	return want, held, true, nil
}

// advance moves the view to updated, the range as this process just wrote it, applying the same
// change to the pool instead of rebuilding it: a claim costs O(log n), not O(n).
func (v *View) advance(updated *v1.FloatingIPRange, change func(*ipam.Pool)) {
	if v.pool != nil {
		change(v.pool)
	}
	v.record = updated.Status.Allocations
	v.index = indexRecord(v.record)
	v.ResourceVersion = updated.ResourceVersion
}

// fillCounts writes the counts of status's allocations into status.
func (v *View) fillCounts(status *v1.FloatingIPRangeStatus) {
	capacity := new(big.Int)
	if v.pool != nil {
		capacity.Set(v.pool.Capacity())
	}
	status.Capacity = capacity.String()
	status.Used = int64(len(status.Allocations))
	inPool := 0
	if v.pool != nil {
		for key := range status.Allocations {
			if addr, ok := canonical(key); ok && v.pool.Check(addr) == nil {
				inPool++
			}
		}
	}
	available := new(big.Int).Sub(capacity, big.NewInt(int64(inPool)))
	status.Available = available.String()
}

func without(addrs []netip.Addr, drop netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		if a != drop {
			out = append(out, a)
		}
	}
	return out
}

func ownerOf(a v1.Allocation) ipam.Owner {
	return ipam.Owner{Namespace: a.Namespace, Name: a.Name, UID: string(a.UID)}
}

func typesUID(s string) types.UID { return types.UID(s) }

func ownerOfFloatingIP(f *v1.FloatingIP) ipam.Owner {
	return ipam.Owner{Namespace: f.Namespace, Name: f.Name, UID: string(f.UID)}
}

func labelsEverything() labels.Selector { return labels.Everything() }
