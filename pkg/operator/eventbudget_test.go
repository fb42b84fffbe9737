package operator

import (
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kubefip/kube-fip-operator/pkg/metrics"
)

// TestNormalEventsWithinTheirBudget: a backlog's Normal Events of one reason are recorded up to
// the burst, then one each period; another reason has its own budget, and every Warning is recorded.
func TestNormalEventsWithinTheirBudget(t *testing.T) {
	fake := record.NewFakeRecorder(1000)
	m := metrics.New()
	now := time.Unix(1000, 0)
	b := newBudgetRecorder(fake, m, func() time.Time { return now })
	obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "y"}}

	for i := 0; i < 100; i++ {
		b.Event(obj, corev1.EventTypeNormal, "Allocated", "holds an address")
		b.Eventf(obj, corev1.EventTypeWarning, "IPConflict", "conflict %d", i)
	}
	b.Event(obj, corev1.EventTypeNormal, "FloatingIPCreated", "created")
	now = now.Add(normalEventEvery)
	b.Event(obj, corev1.EventTypeNormal, "Allocated", "holds an address")
	b.Event(obj, corev1.EventTypeNormal, "Allocated", "holds an address")

	counts := map[string]int{}
	for len(fake.Events) > 0 {
		e := <-fake.Events
		switch {
		case e[:len("Normal Allocated")] == "Normal Allocated":
			counts["Allocated"]++
		case e[:len("Warning IPConflict")] == "Warning IPConflict":
			counts["IPConflict"]++
		default:
			counts["other"]++
		}
	}
	if want := (map[string]int{"Allocated": normalEventBurst + 1, "IPConflict": 100, "other": 1}); !maps.Equal(counts, want) {
		t.Errorf("recorded %v, want %v", counts, want)
	}
	if left := testutil.ToFloat64(m.EventsLeftOut.WithLabelValues("Allocated")); left != float64(100-normalEventBurst+1) {
		t.Errorf("kubefipoperator_events_left_out_total{reason=Allocated} = %v, want %d", left, 100-normalEventBurst+1)
	}
}
