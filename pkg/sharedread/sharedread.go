// Package sharedread shares a read of the API server between the workers that need it at the same
// time, and lets its result serve for a few seconds more. A backlog of guest clusters created in a
// batch asks for the same object once per cluster (the batch's cloud credential, Rancher's address
// settings); one read serves them all.
package sharedread

import (
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Reads shares reads by key: one read at a time per key, its result used for the reuse period.
// Failures are not kept: the next caller reads again. Keep only what may be held in memory: a
// value derived from a Secret, never the Secret.
type Reads[T any] struct {
	reuse time.Duration
	now   func() time.Time
	group singleflight.Group
	mu    sync.Mutex
	kept  map[string]read[T]
	swept time.Time // when keep last forgot the reads older than the reuse period
}

type read[T any] struct {
	value T
	at    time.Time
}

// New returns Reads whose results serve for reuse, by the clock now.
func New[T any](reuse time.Duration, now func() time.Time) *Reads[T] {
	return &Reads[T]{reuse: reuse, now: now, kept: map[string]read[T]{}}
}

// Get returns the value of key read within the reuse period, else what read returns, sharing a
// read in flight with every other caller asking for the same key. Callers share the value: treat
// it as read-only.
func (r *Reads[T]) Get(key string, fetch func() (T, error)) (T, error) {
	r.mu.Lock()
	k, ok := r.kept[key]
	r.mu.Unlock()
	if ok && r.now().Sub(k.at) < r.reuse {
		return k.value, nil
	}
	v, err, _ := r.group.Do(key, func() (interface{}, error) {
		v, err := fetch()
		if err == nil {
			r.keep(key, v)
		}
		return v, err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v.(T), nil
}

// keep remembers value for key and, once per reuse period, forgets every read older than that,
// so the map holds only the keys of the last two periods: a backlog of clusters with a credential
// each keeps thousands of keys in a few seconds, which a look at every key on every read would
// turn into millions of looks.
func (r *Reads[T]) keep(key string, value T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if now.Sub(r.swept) >= r.reuse {
		for k, old := range r.kept {
			if now.Sub(old.at) >= r.reuse {
				delete(r.kept, k)
			}
		}
		r.swept = now
	}
	r.kept[key] = read[T]{value: value, at: now}
}
