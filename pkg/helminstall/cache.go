package helminstall

import (
	"sync"
	"time"
)

// cache keeps what chart sources answered of late: charts and repository indexes. One fetch of a
// key runs at a time, shared by every caller; what it brought is reused for the ttl it was fetched
// with (0: for good), and a failure for failureTTL. No lock is held while a source is read.
type cache[V any] struct {
	failureTTL time.Duration
	mu         sync.Mutex
	entries    map[string]*cached[V]
}

// cached is one fetch, ended or under way: done closes when it ends, and value and err are set
// before.
type cached[V any] struct {
	done  chan struct{}
	ttl   time.Duration
	value V
	err   error
	ended time.Time
}

func newCache[V any](failureTTL time.Duration) *cache[V] {
	return &cache[V]{failureTTL: failureTTL, entries: map[string]*cached[V]{}}
}

// get returns the fetch of key, starting fetch in the background unless one is there that is
// under way, or ended and not stale (nor refresh asked for); shared reports one that was there.
// Starting one drops every stale entry.
func (c *cache[V]) get(key string, ttl time.Duration, refresh bool, fetch func() (V, error)) (e *cached[V], shared bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[key]; ok && !old.stale(c.failureTTL) && !(refresh && old.over()) {
		return old, true
	}
	for k, old := range c.entries {
		if old.stale(c.failureTTL) {
			delete(c.entries, k)
		}
	}
	e = &cached[V]{done: make(chan struct{}), ttl: ttl}
	c.entries[key] = e
	go func() {
		value, err := fetch()
		c.mu.Lock()
		e.value, e.err, e.ended = value, err, time.Now()
		c.mu.Unlock()
		close(e.done)
	}()
	return e, false
}

// over reports whether the fetch has ended.
func (e *cached[V]) over() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// stale reports whether an ended fetch is too old to reuse; one under way never is.
func (e *cached[V]) stale(failureTTL time.Duration) bool {
	switch {
	case !e.over():
		return false
	case e.err != nil:
		return time.Since(e.ended) >= failureTTL
	default:
		return e.ttl > 0 && time.Since(e.ended) >= e.ttl
	}
}
