package discovery

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestCredentialReadsShareOneReadForAWhile(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	c := newCredentialReads(func() time.Time { return now })
	var reads int
	read := func() (string, error) { reads++; return "c-m-harv", nil }
	for i := 0; i < 3; i++ {
		if id, err := c.clusterID("cattle-global-data/cc-1", read); err != nil || id != "c-m-harv" {
			t.Fatalf("clusterID = %q, %v", id, err)
		}
	}
	if reads != 1 {
		t.Fatalf("three clusters within %s read the credential %d times, want once", credentialReuse, reads)
	}
	if _, err := c.clusterID("cattle-global-data/cc-2", read); err != nil || reads != 2 {
		t.Fatalf("another credential: %d reads, %v; want its own read", reads, err)
	}
	now = now.Add(credentialReuse)
	if _, err := c.clusterID("cattle-global-data/cc-1", read); err != nil || reads != 3 {
		t.Fatalf("after %s: %d reads, %v; want the credential read again", credentialReuse, reads, err)
	}
	if len(c.ids) != 1 {
		t.Fatalf("%d reads kept, want only the fresh one: %v", len(c.ids), c.ids)
	}
}

func TestCredentialReadsKeepNoFailure(t *testing.T) {
	t.Parallel()
	c := newCredentialReads(time.Now)
	missing := errors.New("not there yet")
	if _, err := c.clusterID("ns/cc", func() (string, error) { return "", missing }); !errors.Is(err, missing) {
		t.Fatalf("err = %v, want the read's", err)
	}
	id, err := c.clusterID("ns/cc", func() (string, error) { return "c-m-harv", nil })
	if err != nil || id != "c-m-harv" {
		t.Fatalf("after a failure: %q, %v; want the credential read again", id, err)
	}
}

func TestCredentialReadsShareAReadInFlight(t *testing.T) {
	t.Parallel()
	c := newCredentialReads(time.Now)
	var reads atomic.Int32
	release := make(chan struct{})
	read := func() (string, error) {
		reads.Add(1)
		<-release
		return "c-m-harv", nil
	}
	var wg sync.WaitGroup
	ids := make([]string, 5)
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ids[i], _ = c.clusterID("ns/cc", read)
		}(i)
	}
	// Every worker is either waiting on the read in flight or comes after it and finds it kept.
	for reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Fatalf("five workers read the credential %d times, want once", n)
	}
	for i, id := range ids {
		if id != "c-m-harv" {
			t.Fatalf("worker %d got %q", i, id)
		}
	}
}
