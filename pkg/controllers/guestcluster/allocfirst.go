package guestcluster

import (
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// busyFor is how recently a FloatingIP must have begun or ended waiting for its first allocation
// for the allocator to count as working through a backlog.
const busyFor = 5 * time.Second

// holdRecheck is how soon a held pass asks again.
const holdRecheck = 250 * time.Millisecond

// allocationFirst holds the guest passes back while the allocator works through a backlog, so
// that guest work never delays an address: a start-up over thousands of clusters, or a batch of new
// ones, gets every address first, then the guests' passes. A FloatingIP waits while it has no
// address and the allocator has not judged it yet (no Allocated condition). The allocator counts as
// busy while some FloatingIP waits and one began or ended waiting within busyFor: a FloatingIP that
// stays waiting without anything moving (the allocator not running it) holds no pass for longer
// than that. The zero value is not ready: use newAllocationFirst.
type allocationFirst struct {
	mu      sync.Mutex
	waiting map[string]struct{}
	// moved is when a FloatingIP last began or ended waiting.
	moved time.Time
}

func newAllocationFirst() *allocationFirst {
	return &allocationFirst{waiting: map[string]struct{}{}}
}

// awaitsAllocation says whether f waits for its first allocation.
func awaitsAllocation(f *v1.FloatingIP) bool {
	if f == nil || f.DeletionTimestamp != nil || f.Status.IPAddress != "" {
		return false
	}
	_, judged := v1.GetCondition(f.Status.Conditions, v1.Allocated)
	return !judged
}

// observe notes the FloatingIP key as it is now (nil: deleted).
func (a *allocationFirst) observe(key string, f *v1.FloatingIP, now time.Time) {
	waits := awaitsAllocation(f)
	a.mu.Lock()
	defer a.mu.Unlock()
	_, was := a.waiting[key]
	switch {
	case waits && !was:
		a.waiting[key] = struct{}{}
		a.moved = now
	case !waits && was:
		delete(a.waiting, key)
		a.moved = now
	}
}

// handler feeds observe from the FloatingIP informer, as objects arrive.
func (a *allocationFirst) handler(now func() time.Time) cache.ResourceEventHandler {
	seen := func(obj interface{}, f *v1.FloatingIP) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			a.observe(key, f, now())
		}
	}
	live := func(obj interface{}) {
		f, _ := obj.(*v1.FloatingIP)
		seen(obj, f)
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: live, UpdateFunc: func(_, obj interface{}) { live(obj) },
		DeleteFunc: func(obj interface{}) { seen(obj, nil) }}
}

// hold says whether a guest pass should wait: while the allocator is busy with a backlog.
func (a *allocationFirst) hold(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.waiting) > 0 && now.Sub(a.moved) < busyFor
}
