package allocation

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

func rangeOf(name, cidr string, created time.Time, alloc map[string]string, exclude ...string) *v1.FloatingIPRange {
	r := &v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: "range-" + "uid", ResourceVersion: "1", CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1.FloatingIPRangeSpec{IPRange: cidr, Exclude: exclude},
	}
	if len(alloc) > 0 {
		r.Status.Allocations = map[string]v1.Allocation{}
		for addr, uid := range alloc {
			r.Status.Allocations[addr] = v1.Allocation{Namespace: "ns", Name: "fip-" + uid, UID: typesUID(uid)}
		}
	}
	return r
}

func owner(uid string) ipam.Owner { return ipam.Owner{Namespace: "ns", Name: "fip-" + uid, UID: uid} }

func TestPlan(t *testing.T) {
	now := time.Now()
	base := rangeOf("r", "10.0.0.0/29", now, map[string]string{"10.0.0.1": "a", "10.0.0.2": "b"})
	for _, tc := range []struct {
		name        string
		uid         string
		want        string
		problem     *Problem
		addr        string
		others      []string
		changed     bool
		errIs       error
		takenHolder string
	}{
		{name: "dynamic, already holds", uid: "a", addr: "10.0.0.1"},
		{name: "dynamic, new owner gets the lowest free", uid: "c", addr: "10.0.0.3", changed: true},
		{name: "static, own address", uid: "b", want: "10.0.0.2", addr: "10.0.0.2"},
		{name: "static, taken", uid: "c", want: "10.0.0.1", errIs: ipam.ErrTaken, takenHolder: "fip-a"},
		{name: "static move keeps the old as other", uid: "a", want: "10.0.0.5", addr: "10.0.0.5", others: []string{"10.0.0.1"}, changed: true},
		{name: "static, broadcast", uid: "c", want: "10.0.0.7", errIs: ipam.ErrReserved},
		{name: "static, outside", uid: "c", want: "10.9.0.1", errIs: ipam.ErrOutOfRange},
		{name: "holding survives a problem", uid: "a", problem: &Problem{Reason: ReasonOverlap}, addr: "10.0.0.1"},
		{name: "a new claim is refused on a problem", uid: "c", problem: &Problem{Reason: ReasonOverlap}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			view := NewView(base)
			var want netip.Addr
			if tc.want != "" {
				want = netip.MustParseAddr(tc.want)
			}
			addr, others, changed, err := view.plan(owner(tc.uid), want, tc.problem)
			if tc.problem != nil && tc.addr == "" {
				var nr *NotReadyError
				if !errors.As(err, &nr) || nr.Problem.Reason != tc.problem.Reason {
					t.Fatalf("err = %v, want NotReadyError %s", err, tc.problem.Reason)
				}
				return
			}
			if tc.errIs != nil {
				if !errors.Is(err, tc.errIs) {
					t.Fatalf("err = %v, want %v", err, tc.errIs)
				}
				var taken *ipam.TakenError
				if tc.takenHolder != "" && (!errors.As(err, &taken) || taken.Holder.Name != tc.takenHolder) {
					t.Errorf("holder = %+v, want %s", taken, tc.takenHolder)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if addr.String() != tc.addr || changed != tc.changed {
				t.Errorf("plan = %s changed=%v, want %s changed=%v", addr, changed, tc.addr, tc.changed)
			}
			var got []string
			for _, o := range others {
				got = append(got, o.String())
			}
			if strings.Join(got, ",") != strings.Join(tc.others, ",") {
				t.Errorf("others = %v, want %v", got, tc.others)
			}
		})
	}
}

func TestViewFlagsOrphansAndCounts(t *testing.T) {
	now := time.Now()
	r := rangeOf("r", "10.0.0.0/29", now, map[string]string{"10.0.0.1": "a", "10.0.0.3": "b", "10.0.0.9": "c", "garbage": "d"}, "10.0.0.3")
	view := NewView(r)
	if view.problem == nil || view.problem.Reason != ReasonOrphanedAllocations {
		t.Fatalf("problem = %+v, want OrphanedAllocations", view.problem)
	}
	for _, want := range []string{"10.0.0.3 (ns/fip-b: excluded)", "10.0.0.9 (ns/fip-c: outside the range)", "garbage (ns/fip-d: not an address)"} {
		if !strings.Contains(view.problem.Message, want) {
			t.Errorf("problem message %q lacks %q", view.problem.Message, want)
		}
	}
	capacity, used, available := view.Counts()
	// /29: 6 usable, one excluded → 5; 4 recorded of which 3 orphaned → 1 in the pool → 4 free.
	if capacity.String() != "5" || used != 4 || available.String() != "4" {
		t.Errorf("counts = %s/%d/%s, want 5/4/4", capacity, used, available)
	}

	invalid := NewView(rangeOf("bad", "10.0.0.5/29", now, nil))
	if invalid.problem == nil || invalid.problem.Reason != ReasonInvalidRange {
		t.Errorf("a CIDR with host bits = %+v, want InvalidRange", invalid.problem)
	}
}

func TestOverlapFlagsTheYounger(t *testing.T) {
	now := time.Now()
	older := rangeOf("older", "10.0.0.0/24", now.Add(-time.Hour), nil)
	younger := rangeOf("younger", "10.0.0.128/25", now, nil)
	disjoint := rangeOf("disjoint", "10.0.1.0/24", now, nil)
	yp := NewView(younger).pool
	if p := overlap(younger, yp, []*v1.FloatingIPRange{older, disjoint}); p == nil || !strings.Contains(p.Message, "older") {
		t.Errorf("the younger range was not flagged: %+v", p)
	}
	if p := overlap(older, NewView(older).pool, []*v1.FloatingIPRange{younger}); p != nil {
		t.Errorf("the older range was flagged: %+v", p)
	}
	if p := overlap(disjoint, NewView(disjoint).pool, []*v1.FloatingIPRange{older, younger}); p != nil {
		t.Errorf("a disjoint range was flagged: %+v", p)
	}
}

func TestFillCounts(t *testing.T) {
	r := rangeOf("r", "fd00::/64", time.Now(), map[string]string{"fd00::1": "a", "fd00::2": "b"})
	view := NewView(r)
	status := r.Status.DeepCopy()
	view.fillCounts(status)
	if status.Capacity != "18446744073709551615" || status.Used != 2 || status.Available != "18446744073709551613" {
		t.Errorf("counts = %s/%d/%s", status.Capacity, status.Used, status.Available)
	}
}
