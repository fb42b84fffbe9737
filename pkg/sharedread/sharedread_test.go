package sharedread

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const reuse = 5 * time.Second

func TestOneReadServesForAWhile(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	r := New[string](reuse, func() time.Time { return now })
	var reads int
	read := func() (string, error) { reads++; return "c-m-harv", nil }
	for i := 0; i < 3; i++ {
		if v, err := r.Get("cattle-global-data/cc-1", read); err != nil || v != "c-m-harv" {
			t.Fatalf("Get = %q, %v", v, err)
		}
	}
	if reads != 1 {
		t.Fatalf("three callers within %s read %d times, want once", reuse, reads)
	}
	if _, err := r.Get("cattle-global-data/cc-2", read); err != nil || reads != 2 {
		t.Fatalf("another key: %d reads, %v; want its own read", reads, err)
	}
	now = now.Add(reuse)
	if _, err := r.Get("cattle-global-data/cc-1", read); err != nil || reads != 3 {
		t.Fatalf("after %s: %d reads, %v; want a fresh read", reuse, reads, err)
	}
	if len(r.kept) != 1 {
		t.Fatalf("%d reads kept, want only the fresh one: %v", len(r.kept), r.kept)
	}
}

func TestNoFailureIsKept(t *testing.T) {
	t.Parallel()
	r := New[string](reuse, time.Now)
	missing := errors.New("not there yet")
	if _, err := r.Get("ns/cc", func() (string, error) { return "", missing }); !errors.Is(err, missing) {
		t.Fatalf("err = %v, want the read's", err)
	}
	v, err := r.Get("ns/cc", func() (string, error) { return "c-m-harv", nil })
	if err != nil || v != "c-m-harv" {
		t.Fatalf("after a failure: %q, %v; want a fresh read", v, err)
	}
}

func TestAReadInFlightIsShared(t *testing.T) {
	t.Parallel()
	r := New[string](reuse, time.Now)
	var reads atomic.Int32
	release := make(chan struct{})
	read := func() (string, error) {
		reads.Add(1)
		<-release
		return "c-m-harv", nil
	}
	var wg sync.WaitGroup
	values := make([]string, 5)
	for i := range values {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			values[i], _ = r.Get("ns/cc", read)
		}(i)
	}
	// Every caller is either waiting on the read in flight or comes after it and finds it kept.
	for reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Fatalf("five callers read %d times, want once", n)
	}
	for i, v := range values {
		if v != "c-m-harv" {
			t.Fatalf("caller %d got %q", i, v)
		}
	}
}

// TestManyKeysKeepOnlyRecentReads: a backlog of clusters with a credential each reads a new key
// every few milliseconds; what is kept stays within the keys of the last two reuse periods.
func TestManyKeysKeepOnlyRecentReads(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	r := New[int](reuse, func() time.Time { return now })
	const every = 10 * time.Millisecond
	perPeriod := int(reuse / every)
	for i := 0; i < 10*perPeriod; i++ {
		if _, err := r.Get(fmt.Sprintf("cattle-global-data/cc-%d", i), func() (int, error) { return i, nil }); err != nil {
			t.Fatal(err)
		}
		if len(r.kept) > 2*perPeriod {
			t.Fatalf("after %d keys, %d kept; want at most the %d of two reuse periods", i+1, len(r.kept), 2*perPeriod)
		}
		now = now.Add(every)
	}
	if v, err := r.Get(fmt.Sprintf("cattle-global-data/cc-%d", 10*perPeriod-1), func() (int, error) { return -1, nil }); err != nil || v != 10*perPeriod-1 {
		t.Errorf("the last key read: %d, %v; want its kept value", v, err)
	}
}
