package v1

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestSetConditionChangesOnlyWhenSomethingDiffers(t *testing.T) {
	var status FloatingIPStatus
	if !SetCondition(&status, Ready, false, "RangeExhausted", "no free address") {
		t.Fatal("adding a condition reported no change")
	}
	first := status.Conditions[0]
	if first.LastUpdateTime == "" || first.LastTransitionTime == "" || first.Status != corev1.ConditionFalse {
		t.Fatalf("a new condition lacks its status or timestamps: %+v", first)
	}
	if SetCondition(&status, Ready, false, "RangeExhausted", "no free address") {
		t.Error("setting the same condition again reported a change")
	}
	if status.Conditions[0] != first {
		t.Errorf("an unchanged condition was touched: %+v -> %+v", first, status.Conditions[0])
	}

	// Backdate the timestamps, so that a move of either shows.
	old := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	status.Conditions[0].LastUpdateTime, status.Conditions[0].LastTransitionTime = old, old
	if !SetCondition(&status, Ready, false, "RangeExhausted", "still no free address") {
		t.Error("a new message reported no change")
	}
	if c := status.Conditions[0]; c.LastUpdateTime == old || c.LastTransitionTime != old {
		t.Errorf("a new message with the same status: %+v; want lastUpdateTime moved and lastTransitionTime kept", c)
	}
	if !SetCondition(&status, Ready, true, "Allocated", "holds 10.0.0.1") {
		t.Error("a status flip reported no change")
	}
	c := status.Conditions[0]
	if len(status.Conditions) != 1 || c.Status != corev1.ConditionTrue || c.Reason != "Allocated" || c.Message != "holds 10.0.0.1" {
		t.Errorf("conditions = %+v", status.Conditions)
	}
	if c.LastTransitionTime == old {
		t.Errorf("a status flip kept lastTransitionTime %s", old)
	}
	if !Ready.IsTrue(&status) || Allocated.IsTrue(&status) {
		t.Error("wrangler's getters disagree with the conditions")
	}
}

func TestConditionsOfObjectsAndStatuses(t *testing.T) {
	t.Parallel()
	r := &FloatingIPRange{}
	SetCondition(r, Warning, true, "NoCapacity", "nothing to hand out")
	SetCondition(&r.Status, Ready, true, "Ready", "")
	if len(r.Status.Conditions) != 2 {
		t.Fatalf("conditions = %+v; want Warning and Ready", r.Status.Conditions)
	}
	w, ok := GetCondition(r.Status.Conditions, Warning)
	if !ok || w.Reason != "NoCapacity" || w.LastTransitionTime == "" {
		t.Errorf("Warning set through the object: %+v, %v", w, ok)
	}
	if _, ok := GetCondition(r.Status.Conditions, Allocated); ok {
		t.Error("GetCondition found a condition that was never set")
	}
	f := &FloatingIP{}
	SetCondition(f, GuestConfigured, false, "ClusterNotFound", "gone")
	if GuestConfigured.GetReason(f) != "ClusterNotFound" || f.Status.Conditions[0].LastTransitionTime == "" {
		t.Errorf("GuestConfigured set through the object: %+v", f.Status.Conditions)
	}
}
