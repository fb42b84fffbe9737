package helminstall

import (
	"errors"
	"testing"
	"time"
)

// TestCacheKeepsEachFetchForItsTTL: a fetch under way is shared, a refresh included; an ended one
// is reused for its ttl (0: for good, as a pinned chart), a failure for the failure TTL; a refresh
// replaces an ended one, and a stale entry is dropped when another fetch starts.
func TestCacheKeepsEachFetchForItsTTL(t *testing.T) {
	t.Parallel()
	c := newCache[int](time.Minute)
	get := func(key string, ttl time.Duration, refresh bool, err error) (*cached[int], bool) {
		e, shared := c.get(key, ttl, refresh, func() (int, error) { return 1, err })
		<-e.done
		return e, shared
	}
	age := func(key string, by time.Duration) {
		c.mu.Lock()
		c.entries[key].ended = c.entries[key].ended.Add(-by)
		c.mu.Unlock()
	}

	block := make(chan struct{})
	first, _ := c.get("a", time.Minute, false, func() (int, error) { <-block; return 1, nil })
	if e, shared := c.get("a", time.Minute, true, func() (int, error) { return 2, nil }); !shared || e != first {
		t.Error("a fetch under way was not shared")
	}
	close(block)
	<-first.done
	if _, shared := get("a", time.Minute, false, nil); !shared {
		t.Error("a fetch within its ttl was not reused")
	}
	if _, shared := get("a", time.Minute, true, nil); shared {
		t.Error("a refresh reused an ended fetch")
	}
	age("a", time.Minute)
	if _, shared := get("a", time.Minute, false, nil); shared {
		t.Error("a fetch past its ttl was reused")
	}

	get("pinned", 0, false, nil)
	age("pinned", 24*time.Hour)
	if _, shared := get("pinned", 0, false, nil); !shared {
		t.Error("a fetch kept for good was fetched again")
	}

	if e, _ := get("failed", 0, false, errors.New("down")); e.err == nil {
		t.Fatal("the failure was not kept")
	}
	if e, shared := get("failed", 0, false, nil); !shared || e.err == nil {
		t.Error("a failure within the failure TTL was not reused")
	}
	age("failed", time.Minute)
	age("a", time.Minute)
	if e, shared := get("failed", 0, false, nil); shared || e.err != nil {
		t.Error("a failure past the failure TTL was reused")
	}
	if _, ok := c.entries["a"]; ok {
		t.Error("a stale entry was kept when another fetch started")
	}
}
