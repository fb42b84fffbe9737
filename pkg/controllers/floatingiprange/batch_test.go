package floatingiprange

import (
	"testing"
	"time"

	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
)

// delayedQueue records what the handler asks of the range queue.
type delayedQueue struct {
	kubefipcontrollers.FloatingIPRangeController
	asked []time.Duration
}

func (q *delayedQueue) EnqueueAfter(_ string, d time.Duration) { q.asked = append(q.asked, d) }

// TestAllocationChangesAreBatched: however many allocations of a range change within
// StatusInterval, one pass is asked for; once a pass has started — whether the one asked for or
// an earlier one the queue ran in its place — the next change asks for another, so no change is
// left for a pass that already read the allocations.
func TestAllocationChangesAreBatched(t *testing.T) {
	q := &delayedQueue{}
	h := &handler{ranges: q, due: map[string]time.Time{}}
	for i := 0; i < 100; i++ {
		h.allocationsChanged("r")
	}
	if len(q.asked) != 1 || q.asked[0] != StatusInterval {
		t.Fatalf("100 changes asked for passes %v; want one after %s", q.asked, StatusInterval)
	}
	h.allocationsChanged("other")
	if len(q.asked) != 2 {
		t.Fatalf("a change of another range asked for no pass of its own")
	}

	h.passStarts("r") // the queue ran r's pass before its due time
	h.allocationsChanged("r")
	if len(q.asked) != 3 {
		t.Fatalf("a change after a pass started asked for no pass: %v", q.asked)
	}
	h.allocationsChanged("r")
	if len(q.asked) != 3 {
		t.Fatalf("a second change within the interval asked for another pass: %v", q.asked)
	}
}
