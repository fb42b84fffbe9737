package floatingiprange

import (
	"testing"
	"time"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

// TestAllocationChangesAreBatched: however many allocations of a range change within
// StatusInterval, one pass is asked for; once a pass has started — whether the one asked for or
// an earlier one the queue ran in its place — the next change asks for another, so no change is
// left for a pass that already read the allocations.
func TestAllocationChangesAreBatched(t *testing.T) {
	q := fakes.NewRanges()
	h := &handler{ranges: q, due: map[string]time.Time{}}
	for i := 0; i < 100; i++ {
		h.allocationsChanged("r")
	}
	if len(q.Delays) != 1 || q.Delays[0] != StatusInterval {
		t.Fatalf("100 changes asked for passes %v; want one after %s", q.Delays, StatusInterval)
	}
	h.allocationsChanged("other")
	if len(q.Delays) != 2 {
		t.Fatalf("a change of another range asked for no pass of its own")
	}

	h.passStarts("r") // the queue ran r's pass before its due time
	h.allocationsChanged("r")
	if len(q.Delays) != 3 {
		t.Fatalf("a change after a pass started asked for no pass: %v", q.Delays)
	}
	h.allocationsChanged("r")
	if len(q.Delays) != 3 {
		t.Fatalf("a second change within the interval asked for another pass: %v", q.Delays)
	}
}

// TestCountsWaitForTheInterval: a status that differs in its counts alone waits until
// StatusInterval has passed since the last write; any other difference does not.
func TestCountsWaitForTheInterval(t *testing.T) {
	h := &handler{written: map[string]time.Time{}}
	if wait := h.sinceWritten("r"); wait > 0 {
		t.Fatalf("a range never written waits %s", wait)
	}
	h.written["r"] = time.Now()
	if wait := h.sinceWritten("r"); wait <= 0 || wait > StatusInterval {
		t.Fatalf("just after a write the counts wait %s; want up to %s", wait, StatusInterval)
	}
	h.written["r"] = time.Now().Add(-StatusInterval)
	if wait := h.sinceWritten("r"); wait > 0 {
		t.Fatalf("an interval after a write the counts still wait %s", wait)
	}

	old := v1.FloatingIPRangeStatus{Capacity: "254", Used: 1, Available: "253", ObservedGeneration: 1}
	counts := old
	counts.Used, counts.Available = 2, "252"
	available := int64(252)
	counts.AvailableCount, counts.UsedPercent = &available, 1
	if !countsOnly(&old, &counts) {
		t.Error("a change of Used, Available, AvailableCount and UsedPercent is not counts only")
	}
	edited := counts
	edited.ObservedGeneration = 2
	if countsOnly(&old, &edited) {
		t.Error("a new observedGeneration passed for counts only")
	}
	cond := counts
	v1.SetCondition(&cond, v1.Ready, false, "InvalidRange", "bad")
	if countsOnly(&old, &cond) {
		t.Error("a new condition passed for counts only")
	}
}
