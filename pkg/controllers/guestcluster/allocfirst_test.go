package guestcluster

import (
	"testing"
	"time"

	"github.com/rancher/wrangler/v2/pkg/genericcondition"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// TestAllocationFirst: guest passes are held while FloatingIPs wait for their first allocation and
// the allocator makes progress; once every FloatingIP is judged (an address, or an Allocated
// condition of any status), or nothing moved for busyFor, no pass is held.
func TestAllocationFirst(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	waiting := func(name string) *v1.FloatingIP {
		return &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Namespace: "c-m-1", Name: name}}
	}
	allocated := func(name string) *v1.FloatingIP {
		f := waiting(name)
		f.Status.IPAddress = "10.0.0.1"
		return f
	}
	refused := func(name string) *v1.FloatingIP {
		f := waiting(name)
		f.Status.Conditions = []genericcondition.GenericCondition{{Type: string(v1.Allocated), Status: corev1.ConditionFalse, Reason: v1.ReasonRangeExhausted}}
		return f
	}
	a := newAllocationFirst()
	if a.hold(t0) {
		t.Fatal("held with nothing waiting")
	}
	a.observe("c-m-1/a", waiting("a"), t0)
	a.observe("c-m-1/b", waiting("b"), t0)
	if !a.hold(t0.Add(time.Second)) {
		t.Error("not held while two FloatingIPs wait for their first allocation")
	}
	a.observe("c-m-1/a", allocated("a"), t0.Add(4*time.Second))
	if !a.hold(t0.Add(8 * time.Second)) {
		t.Error("not held while the allocator makes progress and one FloatingIP still waits")
	}
	if a.hold(t0.Add(9*time.Second + time.Millisecond)) {
		t.Error("held although nothing moved for busyFor: a FloatingIP nobody allocates holds the guests back")
	}
	a.observe("c-m-1/b", refused("b"), t0.Add(10*time.Second))
	if a.hold(t0.Add(10 * time.Second)) {
		t.Error("held once every FloatingIP is judged, one refused")
	}
	a.observe("c-m-1/c", waiting("c"), t0.Add(11*time.Second))
	a.observe("c-m-1/c", nil, t0.Add(11*time.Second))
	if a.hold(t0.Add(11 * time.Second)) {
		t.Error("held by a deleted FloatingIP")
	}
	gone := waiting("d")
	gone.DeletionTimestamp = &metav1.Time{Time: t0}
	a.observe("c-m-1/d", gone, t0.Add(12*time.Second))
	if a.hold(t0.Add(12 * time.Second)) {
		t.Error("held by a FloatingIP being deleted")
	}
}
