package status

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
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
	f, err = MarkFloatingIPFailed(fips, f, v1.ReasonAllocationFailed, "the API failed")
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

// TestAConflictIsSettledOnTheObjectReadAfresh: a write against an object another writer changed
// meanwhile is applied again to the object read afresh — a FloatingIP by GET, a range by a LIST of
// its name — and the other writer's fields survive.
func TestAConflictIsSettledOnTheObjectReadAfresh(t *testing.T) {
	fips := fakes.NewFloatingIPs(fip())
	if _, err := UpdateFloatingIP(fips, fip(), func(s *v1.FloatingIPStatus) { s.GuestState = v1.GuestStateConfigured }); err != nil {
		t.Fatal(err)
	}
	written, err := UpdateFloatingIP(fips, fip(), allocated)
	if err != nil {
		t.Fatalf("the conflict was not settled: %v", err)
	}
	if written.Status.GuestState != v1.GuestStateConfigured || written.Status.IPAddress != "10.0.0.1" {
		t.Errorf("status %+v, want both writers' fields", written.Status)
	}

	r := &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "r-uid", ResourceVersion: "1"}}
	ranges := fakes.NewRanges(r, &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "other", UID: "other-uid"}})
	if _, err := UpdateRange(ranges, r, func(s *v1.FloatingIPRangeStatus) { s.Used = 1 }); err != nil {
		t.Fatal(err)
	}
	settled, err := UpdateRange(ranges, r, func(s *v1.FloatingIPRangeStatus) { s.Capacity = "6" })
	if err != nil {
		t.Fatalf("the conflict was not settled: %v", err)
	}
	if settled.Name != "r" || settled.Status.Used != 1 || settled.Status.Capacity != "6" {
		t.Errorf("range %s status %+v, want r with both writes", settled.Name, settled.Status)
	}
}

// TestAConflictTheWriterCannotSettleGoesBackToTheQueue: when the object read afresh is no newer
// than the one written against, or is another object under the name, the conflict is returned for
// the caller's queue to retry, and nothing else is written.
func TestAConflictTheWriterCannotSettleGoesBackToTheQueue(t *testing.T) {
	conflict := apierrors.NewConflict(v1.Resource("floatingipranges"), "r", errors.New("modified"))
	for _, tc := range []struct {
		name string
		// stored is the range as the API server holds it.
		stored *v1.FloatingIPRange
		writes int
	}{
		{"nothing newer", &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "r-uid", ResourceVersion: "1"}}, 1},
		{"re-created", &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "other-uid", ResourceVersion: "2"}}, 1},
		{"changed at every write", &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "r-uid", ResourceVersion: "2"}}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ranges := fakes.NewRanges(tc.stored)
			writes := 0
			ranges.Before = func(string, *v1.FloatingIPRange) error {
				writes++
				if tc.writes > 1 {
					// Another writer got in first, every time.
					_ = ranges.Edit("", "r", func(*v1.FloatingIPRange) {})
				}
				return conflict
			}
			r := &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "r-uid", ResourceVersion: "1"}}
			_, err := UpdateRange(ranges, r, func(s *v1.FloatingIPRangeStatus) { s.Used = 1 })
			if !apierrors.IsConflict(err) {
				t.Errorf("error %v, want the conflict", err)
			}
			if writes != tc.writes {
				t.Errorf("%d writes, want %d", writes, tc.writes)
			}
		})
	}
}
