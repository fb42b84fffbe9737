package floatingiprange

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rancher/wrangler/v2/pkg/condition"
	"github.com/rancher/wrangler/v2/pkg/generic"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

func newRange(name, cidr string, age time.Duration, exclude ...string) *v1.FloatingIPRange {
	return &v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid"), Generation: 1,
			CreationTimestamp: metav1.NewTime(time.Now().Add(-age))},
		Spec: v1.FloatingIPRangeSpec{IPRange: cidr, Exclude: exclude},
	}
}

// rangeHandler is a handler over the given ranges, with an allocation manager of its own.
func rangeHandler(t *testing.T, ranges ...*v1.FloatingIPRange) (*handler, *fakes.Ranges, *record.FakeRecorder) {
	api := fakes.NewRanges(ranges...)
	fips := fakes.NewFloatingIPs()
	events := record.NewFakeRecorder(20)
	alloc := allocation.NewManager(allocation.Deps{Allocations: fakes.NewAllocations(), Ranges: api, FloatingIPs: fips}, allocation.Options{})
	h := &handler{ctx: t.Context(), ranges: api, fips: fips, alloc: alloc, metrics: metrics.New(), recorder: events,
		labels: map[string]metrics.RangeLabels{}, due: map[string]time.Time{}, written: map[string]time.Time{}}
	return h, api, events
}

// TestEveryRangeReason: each condition reason of a range, from the range that leads to it, with
// its Event.
func TestEveryRangeReason(t *testing.T) {
	shrunk := newRange("shrunk", "10.5.0.0/29", time.Hour)
	for _, tc := range []struct {
		name     string
		ranges   []*v1.FloatingIPRange
		claim    string // an address held in the range before the pass
		edit     func(*v1.FloatingIPRange)
		condType condition.Cond
		status   corev1.ConditionStatus
		reason   string
		event    string // "" when the first pass records none
	}{
		{"valid", []*v1.FloatingIPRange{newRange("ok", "10.3.0.0/29", 0)}, "", nil, v1.Ready, corev1.ConditionTrue, v1.ReasonReady, ""},
		{"invalid", []*v1.FloatingIPRange{newRange("bad", "10.3.0.0/33", 0)}, "", nil, v1.Ready, corev1.ConditionFalse, v1.ReasonInvalidRange, "Warning"},
		{"overlap", []*v1.FloatingIPRange{newRange("young", "10.3.0.0/30", 0), newRange("old", "10.3.0.0/29", time.Hour)}, "", nil,
			v1.Ready, corev1.ConditionFalse, v1.ReasonOverlap, "Warning"},
		{"orphans", []*v1.FloatingIPRange{shrunk}, "10.5.0.6", func(r *v1.FloatingIPRange) { r.Spec.IPRange = "10.5.0.0/30" },
			v1.Ready, corev1.ConditionFalse, v1.ReasonOrphanedAllocations, "Warning"},
		{"whole address space", []*v1.FloatingIPRange{newRange("all", "0.0.0.0/0", 0)}, "", nil, v1.Warning, corev1.ConditionTrue, v1.ReasonWholeAddressSpace, "Warning"},
		{"nothing to hand out", []*v1.FloatingIPRange{newRange("none", "10.4.0.0/30", 0, "10.4.0.1-10.4.0.2")}, "", nil,
			v1.Warning, corev1.ConditionTrue, v1.ReasonNoCapacity, "Warning"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, api, events := rangeHandler(t, tc.ranges...)
			r, err := api.Cache().Get(tc.ranges[0].Name)
			if err != nil {
				t.Fatal(err)
			}
			if tc.claim != "" {
				if _, _, err := h.alloc.Claim(context.Background(), r.Name, allocation.Claimant{Owner: ipam.Owner{Namespace: "c-m-1", Name: "holder", UID: "holder-uid"}}, netip.MustParseAddr(tc.claim), false); err != nil {
					t.Fatal(err)
				}
			}
			if tc.edit != nil {
				tc.edit(r)
				r.Generation++
				api.Add(r)
			}
			if _, err := h.OnRangeChange(r.Name, r.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			if len(api.Written) != 1 {
				t.Fatalf("%d status writes, want 1", len(api.Written))
			}
			c, ok := v1.GetCondition(api.Written[0].Status.Conditions, tc.condType)
			if !ok || c.Status != tc.status || c.Reason != tc.reason || (tc.status == corev1.ConditionFalse && c.Message == "") {
				t.Errorf("%s = %s/%s %q, want %s/%s", tc.condType, c.Status, c.Reason, c.Message, tc.status, tc.reason)
			}
			if tc.event == "" {
				if len(events.Events) != 0 {
					t.Errorf("Event %q on the first pass, want none", <-events.Events)
				}
				return
			}
			select {
			case e := <-events.Events:
				if !strings.HasPrefix(e, tc.event+" "+tc.reason+" ") {
					t.Errorf("Event %q, want %s %s", e, tc.event, tc.reason)
				}
			default:
				t.Error("no Event")
			}
		})
	}
}

// TestReadyAgainIsAnnounced: a range that turns Ready after having been seen says so in an Event.
func TestReadyAgainIsAnnounced(t *testing.T) {
	r := newRange("back", "10.6.0.0/29", 0)
	r.Status.ObservedGeneration = 1
	v1.SetCondition(r, v1.Ready, false, v1.ReasonInvalidRange, "was invalid")
	h, api, events := rangeHandler(t, r)
	if _, err := h.OnRangeChange(r.Name, r.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if c, _ := v1.GetCondition(api.Written[0].Status.Conditions, v1.Ready); c.Reason != v1.ReasonReady {
		t.Errorf("Ready reason %q", c.Reason)
	}
	if e := <-events.Events; !strings.HasPrefix(e, "Normal "+v1.ReasonReady+" ") {
		t.Errorf("Event %q, want Normal %s", e, v1.ReasonReady)
	}
}

// TestDeletionBlocked: a range with an address held keeps its finalizer and says who holds it;
// once released, it lets go.
func TestDeletionBlocked(t *testing.T) {
	r := newRange("busy", "10.7.0.0/29", 0)
	h, api, events := rangeHandler(t, r)
	owner := ipam.Owner{Namespace: "c-m-1", Name: "holder", UID: "holder-uid"}
	if _, _, err := h.alloc.Claim(context.Background(), r.Name, allocation.Claimant{Owner: owner}, netip.Addr{}, false); err != nil {
		t.Fatal(err)
	}
	_, err := h.OnRangeRemove(r.Name, r.DeepCopy())
	if !errors.Is(err, generic.ErrSkip) {
		t.Fatalf("err = %v, want ErrSkip to keep the finalizer", err)
	}
	c, _ := v1.GetCondition(api.Written[0].Status.Conditions, v1.Ready)
	if c.Reason != v1.ReasonDeletionBlocked || !strings.Contains(c.Message, "10.7.0.1 (c-m-1/holder)") {
		t.Errorf("Ready = %s %q, want %s naming the holder", c.Reason, c.Message, v1.ReasonDeletionBlocked)
	}
	if c, ok := v1.GetCondition(api.Written[0].Status.Conditions, v1.Reconciling); !ok || c.Reason != v1.ReasonDeletionBlocked {
		t.Errorf("Reconciling = %+v, %v; want True with reason %s: the deletion goes on by itself", c, ok, v1.ReasonDeletionBlocked)
	}
	if e := <-events.Events; !strings.HasPrefix(e, "Normal "+v1.ReasonDeletionBlocked+" ") {
		t.Errorf("Event %q; want a Normal one", e)
	}
	if _, err := h.alloc.Release(context.Background(), r.Name, owner.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.OnRangeRemove(r.Name, r.DeepCopy()); err != nil {
		t.Errorf("after the release: %v, want the finalizer let go", err)
	}
}
