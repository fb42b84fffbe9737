package conditions

import (
	"testing"

	"github.com/rancher/wrangler/v2/pkg/genericcondition"
	corev1 "k8s.io/api/core/v1"
)

func TestSetChangesOnlyWhenSomethingDiffers(t *testing.T) {
	var conds []genericcondition.GenericCondition
	if !False(&conds, "Ready", "RangeExhausted", "no free address") {
		t.Fatal("adding a condition reported no change")
	}
	first := conds[0]
	if False(&conds, "Ready", "RangeExhausted", "no free address") {
		t.Error("setting the same condition again reported a change")
	}
	if conds[0] != first {
		t.Errorf("an unchanged condition was touched: %+v -> %+v", first, conds[0])
	}
	if !True(&conds, "Ready", "Allocated", "holds 10.0.0.1") {
		t.Error("a status flip reported no change")
	}
	if len(conds) != 1 || conds[0].Status != corev1.ConditionTrue || conds[0].Reason != "Allocated" {
		t.Errorf("conditions = %+v", conds)
	}
	if !IsTrue(conds, "Ready") || IsTrue(conds, "Allocated") {
		t.Error("IsTrue disagrees with the conditions")
	}
	if _, ok := Get(conds, "Missing"); ok {
		t.Error("Get found a condition that was never set")
	}
}
