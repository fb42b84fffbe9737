package guestcluster

import (
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"
)

// added records the clusters handed to the queue, in order.
type added struct {
	mu   sync.Mutex
	keys []string
}

func (a *added) add(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keys = append(a.keys, key)
}

func (a *added) get() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.keys)
}

func newTestPasses(t *testing.T) (*nextPasses, *testingclock.FakeClock, *added) {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	a := &added{}
	return newNextPasses(a.add, workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 30*time.Second), clk), clk, a
}

// A retry that a later successful pass made needless never runs: the periodic pass replaces it.
func TestNextPassReplacesThePendingRetry(t *testing.T) {
	t.Parallel()
	n, clk, a := newTestPasses(t)
	n.retry("c-m-1") // a pass waited on the allocation: retried in 1s
	n.after("c-m-1", time.Hour)
	clk.Step(2 * time.Second)
	if got := a.get(); len(got) != 0 {
		t.Fatalf("the retry replaced by the periodic pass still ran: %v", got)
	}
	clk.Step(time.Hour)
	if got := a.get(); !slices.Equal(got, []string{"c-m-1"}) {
		t.Fatalf("the periodic pass after an hour: got %v, want one pass of c-m-1", got)
	}
}

// Retries in a row back off (1s, 2s, 4s); a success starts the backoff over.
func TestNextPassRetriesBackOffAndStartOver(t *testing.T) {
	t.Parallel()
	n, clk, a := newTestPasses(t)
	for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		n.retry("c-m-1")
		clk.Step(wait - time.Millisecond)
		if got := len(a.get()); got != i {
			t.Fatalf("retry %d ran before its %s: %d passes", i+1, wait, got)
		}
		clk.Step(time.Millisecond)
		if got := len(a.get()); got != i+1 {
			t.Fatalf("retry %d did not run after %s: %d passes", i+1, wait, got)
		}
	}
	n.after("c-m-1", time.Hour)
	n.retry("c-m-1")
	clk.Step(time.Second)
	if got := len(a.get()); got != 4 {
		t.Fatalf("the first retry after a success waited longer than 1s: %d passes", got)
	}
}

// Clusters are scheduled on their own; none drops one cluster's pass and stop every pass.
func TestNextPassPerClusterNoneAndStop(t *testing.T) {
	t.Parallel()
	n, clk, a := newTestPasses(t)
	n.after("c-m-1", time.Minute)
	n.after("c-m-2", time.Minute)
	n.retry("c-m-3")
	n.none("c-m-1")
	clk.Step(time.Minute)
	got := a.get()
	slices.Sort(got)
	if !slices.Equal(got, []string{"c-m-2", "c-m-3"}) {
		t.Fatalf("got passes %v, want c-m-2 and c-m-3 (c-m-1 needs none)", got)
	}
	if len(n.timers) != 0 {
		t.Errorf("%d clusters held once their passes ran", len(n.timers))
	}
	n.after("c-m-2", time.Minute)
	n.stop()
	clk.Step(time.Hour)
	if got := len(a.get()); got != 2 {
		t.Errorf("a pass ran after stop: %v", a.get())
	}
	if len(n.timers) != 0 {
		t.Errorf("%d clusters held after stop", len(n.timers))
	}
}

// A pass that starts drops what was scheduled before it: a retry whose timer fires while the pass
// runs queues no second pass, and the pass's own outcome schedules the next.
func TestNextPassStartingDropsTheScheduledOne(t *testing.T) {
	t.Parallel()
	n, clk, a := newTestPasses(t)
	n.retry("c-m-1")
	n.begin("c-m-1") // an event ran the pass before the retry was due
	clk.Step(time.Second)
	if got := a.get(); len(got) != 0 {
		t.Fatalf("the retry fired during the pass that replaced it: %v", got)
	}
	n.after("c-m-1", time.Minute)
	clk.Step(time.Minute)
	if got := a.get(); !slices.Equal(got, []string{"c-m-1"}) {
		t.Fatalf("the pass scheduled by the pass's outcome: got %v, want one pass of c-m-1", got)
	}
}
