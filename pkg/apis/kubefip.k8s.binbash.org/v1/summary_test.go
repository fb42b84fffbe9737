package v1

import (
	"sort"
	"testing"

	"github.com/rancher/wrangler/v2/pkg/condition"
	"github.com/rancher/wrangler/v2/pkg/summary"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// shown is what Rancher's UI makes of obj: wrangler's summary of the object as the API server
// serves it (unstructured), and kstatus' verdict (kubectl wait, Fleet, Flux).
func shown(t *testing.T, obj runtime.Object) (summary.Summary, kstatus.Status) {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	res, err := kstatus.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return summary.Summarize(u), res.Status
}

// meta is an object's metadata as the API server serves it, its status observed.
func meta(kind string) (metav1.TypeMeta, metav1.ObjectMeta) {
	return metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: kind},
		metav1.ObjectMeta{Name: "x", Namespace: "ns", Generation: 3}
}

// fipRefused is a FloatingIP the allocation refused with reason, built as the allocation
// controller builds it.
func fipRefused(reason string) *FloatingIP {
	tm, om := meta("FloatingIP")
	f := &FloatingIP{TypeMeta: tm, ObjectMeta: om, Status: FloatingIPStatus{ObservedGeneration: 3}}
	SetCondition(&f.Status, Allocated, false, reason, "refused: "+reason)
	SetReady(&f.Status)
	return f
}

// fipGuest is a FloatingIP that holds its address, whose guest operations report ok and reason,
// built as the guest controller builds it.
func fipGuest(ok bool, reason string) *FloatingIP {
	tm, om := meta("FloatingIP")
	f := &FloatingIP{TypeMeta: tm, ObjectMeta: om, Status: FloatingIPStatus{ObservedGeneration: 3, IPAddress: "10.0.0.5"}}
	SetCondition(&f.Status, Allocated, true, "Allocated", "holds 10.0.0.5")
	SetReady(&f.Status)
	SetCondition(&f.Status, GuestConfigured, ok, reason, "guest: "+reason)
	SetReady(&f.Status)
	return f
}

// rangeWith is a FloatingIPRange whose Ready is ok with reason, and with warning (when not empty)
// as its Warning condition, built as the range controller builds it.
func rangeWith(ok bool, reason, warning string) *FloatingIPRange {
	tm, om := meta("FloatingIPRange")
	om.Namespace = ""
	r := &FloatingIPRange{TypeMeta: tm, ObjectMeta: om, Status: FloatingIPRangeStatus{ObservedGeneration: 3}}
	SetCondition(&r.Status, Ready, ok, reason, "range: "+reason)
	if warning != "" {
		SetCondition(&r.Status, Warning, true, warning, "look: "+warning)
	}
	return r
}

type verdict int

const (
	active verdict = iota
	transitioning
	failed
)

// check asserts the summary and kstatus of obj say want.
func check(t *testing.T, obj runtime.Object, want verdict) {
	t.Helper()
	s, k := shown(t, obj)
	switch want {
	case active:
		if s.State != "active" || s.Error || s.Transitioning || k != kstatus.CurrentStatus {
			t.Errorf("summary %+v, kstatus %s; want active and Current", s, k)
		}
	case transitioning:
		if !s.Transitioning || s.Error || s.State != "reconciling" || k != kstatus.InProgressStatus {
			t.Errorf("summary %+v, kstatus %s; want reconciling, transitioning, no error, and InProgress", s, k)
		}
	case failed:
		if !s.Error || k != kstatus.FailedStatus {
			t.Errorf("summary %+v, kstatus %s; want an error and Failed", s, k)
		}
	}
}

// notReady is what a Ready=False with a reason of class c shows.
func notReady(c Class) verdict {
	if c == Progress {
		return transitioning
	}
	return failed
}

func sortedReasons(t *testing.T) []string {
	var out []string
	for r := range classified(t) {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// TestSummaryOfEveryReason runs wrangler's summarizer and kstatus over a FloatingIP and a
// FloatingIPRange with each classified reason in each place the operator writes a reason that
// decides Ready, so that a reason added to the classification is checked with no test to edit.
func TestSummaryOfEveryReason(t *testing.T) {
	t.Parallel()
	for _, reason := range sortedReasons(t) {
		c := ClassOf(reason)
		t.Run(reason, func(t *testing.T) {
			if c == Unclassified {
				t.Fatalf("Reasons lists %s as Unclassified", reason)
			}
			if c == Done {
				// A reason of something done is only ever shown on Ready=True.
				check(t, fipGuest(true, reason), active)
				check(t, rangeWith(true, reason, ""), active)
				return
			}
			if c == Notice {
				// A notice sits on an active range's Warning condition.
				check(t, rangeWith(true, "Ready", reason), active)
			}
			want := notReady(c)
			check(t, fipRefused(reason), want)
			check(t, fipGuest(false, reason), want)
			check(t, rangeWith(false, reason, ""), want)
		})
	}
}

// TestSummaryOfNamedStates pins the states a person asks about by name, whatever the
// classification says.
func TestSummaryOfNamedStates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		want verdict
	}{
		{"guest cluster provisioning", fipGuest(false, "Provisioning"), transitioning},
		{"guest cluster pending", fipGuest(false, "ClusterNotFound"), transitioning},
		{"guest kubeconfig not there yet", fipGuest(false, "KubeconfigMissing"), transitioning},
		{"guest cluster disconnected", fipGuest(false, "Disconnected"), transitioning},
		{"waiting for the address", fipGuest(false, "NotAllocated"), transitioning},
		{"waiting for a range", fipRefused("RangeNotFound"), transitioning},
		{"waiting for a retained address", fipRefused("IPRetained"), transitioning},
		{"chart being fetched", fipGuest(false, "ChartFetching"), transitioning},
		{"IP conflict", fipRefused("IPConflict"), failed},
		{"range exhausted", fipRefused("RangeExhausted"), failed},
		{"no matching range", fipRefused("RangeNotReady"), failed},
		{"chart refused", fipGuest(false, "ChartSourceNotAllowed"), failed},
		{"guest refused the user", fipGuest(false, "NotClusterOwner"), failed},
		{"an unknown reason", fipRefused("SomethingNew"), failed},
		{"configured", fipGuest(true, "Configured"), active},
		{"valid range", rangeWith(true, "Ready", ""), active},
		{"invalid range", rangeWith(false, "InvalidRange", ""), failed},
		{"overlapping range", rangeWith(false, "Overlap", ""), failed},
		{"range deletion waiting", rangeWith(false, "DeletionBlocked", ""), transitioning},
		{"range of the whole address space", rangeWith(true, "Ready", "WholeAddressSpace"), active},
		{"range with nothing to hand out", rangeWith(true, "Ready", "NoCapacity"), active},
	} {
		t.Run(tc.name, func(t *testing.T) { check(t, tc.obj, tc.want) })
	}
	// A FloatingIP of no guest cluster is ready once it holds its address, after a refusal.
	f := fipRefused("RangeExhausted")
	SetCondition(&f.Status, Allocated, true, "Allocated", "holds 10.0.0.5")
	SetReady(&f.Status)
	t.Run("allocated after a refusal, no guest cluster", func(t *testing.T) { check(t, f, active) })
}

// TestReadyCarriesReconcilingAndStalled follows one FloatingIP from progress through failure to
// ready: the pair follows Ready, and only one of them is ever there.
func TestReadyCarriesReconcilingAndStalled(t *testing.T) {
	f := fipGuest(false, "Provisioning")
	has := func(want map[string]string) {
		t.Helper()
		for _, c := range []condition.Cond{Reconciling, Stalled} {
			got, ok := GetCondition(f.Status.Conditions, c)
			reason, wanted := want[string(c)]
			switch {
			case wanted && (!ok || got.Status != corev1.ConditionTrue || got.Reason != reason):
				t.Errorf("%s = %+v, %v; want True with reason %s", c, got, ok, reason)
			case !wanted && ok:
				t.Errorf("%s = %+v; want it absent", c, got)
			}
		}
	}
	has(map[string]string{"Reconciling": "Provisioning"})
	SetCondition(&f.Status, GuestConfigured, false, "NotClusterOwner", "403")
	SetReady(&f.Status)
	has(map[string]string{"Stalled": "NotClusterOwner"})
	if r, _ := GetCondition(f.Status.Conditions, Ready); r.Reason != "NotClusterOwner" || r.Status != corev1.ConditionFalse {
		t.Errorf("Ready = %+v; want False with the guest's reason", r)
	}
	SetCondition(&f.Status, GuestConfigured, true, "Configured", "written")
	SetReady(&f.Status)
	has(map[string]string{})
}
