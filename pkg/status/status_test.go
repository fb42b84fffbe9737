package status

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/testenv/fakes"
)

func fip() *v1.FloatingIP {
	return &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Namespace: "c-m-1", Name: "f", UID: "f-uid", ResourceVersion: "1"}}
}

func allocated(s *v1.FloatingIPStatus) {
	s.IPAddress, s.Range = "10.0.0.1", "r"
	v1.SetCondition(s, v1.Allocated, true, v1.ReasonAllocated, "holds 10.0.0.1")
}

func conditionOf(t *testing.T, s *v1.FloatingIPStatus, c string) corev1.ConditionStatus {
	t.Helper()
	for _, cond := range s.Conditions {
		if cond.Type == c {
			return cond.Status
		}
	}
	return ""
}

// TestReadyIsDerivedByTheWriter: the caller sets Allocated; the writer derives Ready from it,
// and a second pass that changes nothing writes nothing.
func TestReadyIsDerivedByTheWriter(t *testing.T) {
	fips := fakes.NewFloatingIPs(fip())
	written, err := UpdateFloatingIP(fips, fip(), allocated)
	if err != nil {
		t.Fatal(err)
	}
	if got := conditionOf(t, &written.Status, "Ready"); got != corev1.ConditionTrue {
		t.Errorf("Ready is %q, want True", got)
	}
	if _, err := UpdateFloatingIP(fips, written, allocated); err != nil {
		t.Fatal(err)
	}
	if len(fips.Written) != 1 {
		t.Errorf("%d status writes, want 1: the second pass changed nothing", len(fips.Written))
	}
}

// TestAFailureOverridesTheDerivedReady: a handler's failure shows Ready=False even while the
// FloatingIP holds its address, and keeps Allocated as it was.
func TestAFailureOverridesTheDerivedReady(t *testing.T) {
	fips := fakes.NewFloatingIPs(fip())
	f, err := UpdateFloatingIP(fips, fip(), allocated)
	if err != nil {
		t.Fatal(err)
	}
	f, err = ShowFloatingIPFailure(fips, f, v1.ReasonAllocationFailed, "the API failed")
	if err != nil {
		t.Fatal(err)
	}
	if got := conditionOf(t, &f.Status, "Ready"); got != corev1.ConditionFalse {
		t.Errorf("Ready is %q, want False", got)
	}
	if got := conditionOf(t, &f.Status, "Allocated"); got != corev1.ConditionTrue {
		t.Errorf("Allocated is %q, want True: the address is still held", got)
	}
}

// TestAConflictIsSettledOnTheCachedObject: a write against an object another writer changed
// meanwhile is applied again to the newer object the cache holds, and the other writer's
// fields survive.
func TestAConflictIsSettledOnTheCachedObject(t *testing.T) {
	fips := fakes.NewFloatingIPs(fip())
	stale := fip()
	if _, err := UpdateFloatingIP(fips, fip(), func(s *v1.FloatingIPStatus) { s.GuestState = v1.GuestStateConfigured }); err != nil {
		t.Fatal(err)
	}
	written, err := UpdateFloatingIP(fips, stale, allocated)
	if err != nil {
		t.Fatalf("the conflict was not settled: %v", err)
	}
	if written.Status.GuestState != v1.GuestStateConfigured || written.Status.IPAddress != "10.0.0.1" {
		t.Errorf("status %+v, want both writers' fields", written.Status)
	}
}

// TestAConflictTheCacheCannotSettleGoesBackToTheQueue: when the cache shows no newer object,
// or another object under the name, the conflict is returned for the caller's queue to retry,
// and nothing else is written.
func TestAConflictTheCacheCannotSettleGoesBackToTheQueue(t *testing.T) {
	conflict := apierrors.NewConflict(v1.Resource("floatingipranges"), "r", errors.New("modified"))
	for _, tc := range []struct {
		name string
		// stored is the range as the cache shows it.
		stored *v1.FloatingIPRange
	}{
		{"the cache lags", &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "r-uid", ResourceVersion: "1"}}},
		{"re-created", &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "other-uid", ResourceVersion: "2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ranges := fakes.NewRanges(tc.stored)
			writes := 0
			ranges.Before = func(string, *v1.FloatingIPRange) error {
				writes++
				return conflict
			}
			r := &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "r-uid", ResourceVersion: "1"}}
			_, err := UpdateRange(ranges, r, func(s *v1.FloatingIPRangeStatus) { s.Used = 1 })
			if !apierrors.IsConflict(err) {
				t.Errorf("error %v, want the conflict", err)
			}
			if writes != 1 {
				t.Errorf("%d writes, want 1: nothing newer was there to write against", writes)
			}
		})
	}
}
