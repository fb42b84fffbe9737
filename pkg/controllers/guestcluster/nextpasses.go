package guestcluster

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// nextPasses holds, for each cluster, the one later pass that is coming: a retry with backoff
// after a pass that asked for one, or the periodic pass after one that succeeded. Scheduling a
// pass replaces the one scheduled before. A cluster waiting on Rancher or on its allocation is
// retried with backoff, and the event it waited for (the address held, the cluster connected)
// runs a pass at once; that pass's outcome then decides what comes next, and the retry it made
// needless never runs. A work queue's AddAfter cannot be taken back, so the timers are kept here
// and a timer that fires hands its cluster to the queue.
type nextPasses struct {
	// add hands a cluster whose time came to the work queue.
	add     func(key string)
	backoff workqueue.TypedRateLimiter[string]
	clock   clock.WithDelayedExecution

	mu     sync.Mutex
	timers map[string]*scheduled
}

// scheduled is one coming pass; its timer hands the cluster to the queue only while it is still
// the cluster's coming pass.
type scheduled struct {
	timer clock.Timer
}

func newNextPasses(add func(string), backoff workqueue.TypedRateLimiter[string], clk clock.WithDelayedExecution) *nextPasses {
	return &nextPasses{add: add, backoff: backoff, clock: clk, timers: map[string]*scheduled{}}
}

// begin is called as a pass over the cluster starts: the pass decides what comes next, so what
// was scheduled before it is dropped, a timer that fires while it runs included.
func (n *nextPasses) begin(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dropLocked(key)
}

// retry schedules the cluster's next pass after its backoff, which grows with every retry in a
// row.
func (n *nextPasses) retry(key string) {
	n.at(key, n.backoff.When(key))
}

// after schedules the cluster's next pass d from now, after a pass that succeeded: its backoff
// starts over.
func (n *nextPasses) after(key string, d time.Duration) {
	n.backoff.Forget(key)
	n.at(key, d)
}

// none drops what was scheduled for a cluster that needs no further pass (no FloatingIP names
// it), and forgets its backoff.
func (n *nextPasses) none(key string) {
	n.backoff.Forget(key)
	n.begin(key)
}

func (n *nextPasses) at(key string, d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dropLocked(key)
	s := &scheduled{}
	n.timers[key] = s
	s.timer = n.clock.AfterFunc(d, func() { n.fire(key, s) })
}

// fire hands the cluster to the queue if s is still its coming pass.
func (n *nextPasses) fire(key string, s *scheduled) {
	n.mu.Lock()
	current := n.timers[key] == s
	if current {
		delete(n.timers, key)
	}
	n.mu.Unlock()
	if current {
		n.add(key)
	}
}

func (n *nextPasses) dropLocked(key string) {
	if s, ok := n.timers[key]; ok {
		s.timer.Stop()
		delete(n.timers, key)
	}
}

// stop drops every scheduled pass, when the controller stops.
func (n *nextPasses) stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for key := range n.timers {
		n.dropLocked(key)
	}
}
