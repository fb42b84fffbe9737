package integration

import (
	"testing"

	"github.com/rancher/wrangler/v2/pkg/condition"
	"github.com/rancher/wrangler/v2/pkg/genericcondition"
	"github.com/rancher/wrangler/v2/pkg/summary"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// shows checks how obj, as the API server returned it, tells progress from failure: Reconciling
// (progress) or Stalled (failure) True with reason, not the other, and wrangler's summary —
// what Rancher's UI shows — transitioning without an error, or an error.
func shows(t *testing.T, what string, obj runtime.Object, conds []genericcondition.GenericCondition, reason string, progress bool) {
	t.Helper()
	want, other := v1.Stalled, v1.Reconciling
	if progress {
		want, other = v1.Reconciling, v1.Stalled
	}
	if c, ok := v1.GetCondition(conds, want); !ok || c.Status != corev1.ConditionTrue || c.Reason != reason {
		t.Errorf("%s: %s = %+v, %v; want True with reason %s", what, want, c, ok, reason)
	}
	if c, ok := v1.GetCondition(conds, other); ok {
		t.Errorf("%s: %s = %+v; want it absent", what, other, c)
	}
	s := summary.Summarize(obj)
	switch {
	case progress && (!s.Transitioning || s.Error):
		t.Errorf("%s: Rancher's summary %+v; want transitioning without an error", what, s)
	case !progress && !s.Error:
		t.Errorf("%s: Rancher's summary %+v; want an error", what, s)
	}
}

// showsActive checks that obj carries neither Reconciling nor Stalled and that Rancher's UI shows
// it active.
func showsActive(t *testing.T, what string, obj runtime.Object, conds []genericcondition.GenericCondition) {
	t.Helper()
	for _, c := range []condition.Cond{v1.Reconciling, v1.Stalled} {
		if got, ok := v1.GetCondition(conds, c); ok {
			t.Errorf("%s: %s = %+v; want it absent", what, c, got)
		}
	}
	if s := summary.Summarize(obj); s.State != "active" || s.Error || s.Transitioning {
		t.Errorf("%s: Rancher's summary %+v; want active", what, s)
	}
}
