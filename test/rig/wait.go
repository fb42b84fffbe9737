package rig

import (
	"fmt"
	"testing"
	"time"
)

// pollInterval is how often Until looks again: often enough that a test waits little longer than
// the condition takes, seldom enough that polling is no load on the API server.
const pollInterval = 100 * time.Millisecond

// Until is how the tests wait for something observable: it calls cond until it reports true and
// returns nil. It gives up with an error naming what, and the last error cond gave, once timeout
// has passed, or at once when stop (which may be nil) reports why waiting longer is pointless,
// for example because the process under test exited.
func Until(timeout time.Duration, what string, stop func() error, cond func() (bool, error)) error {
	return UntilEvery(pollInterval, timeout, what, stop, cond)
}

// UntilEvery is Until looking again every interval: less often where looking is costly, such as
// listing tens of thousands of objects.
func UntilEvery(interval, timeout time.Duration, what string, stop func() error, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if stop != nil {
			if err := stop(); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("%s: not within %s (last: %v)", what, timeout, last)
			}
			return fmt.Errorf("%s: not within %s", what, timeout)
		}
		time.Sleep(interval)
	}
}

// Within reports whether cond came true within timeout, for a caller that describes the failure
// itself from what cond saw last.
func Within(timeout time.Duration, cond func() bool) bool {
	return Until(timeout, "", nil, func() (bool, error) { return cond(), nil }) == nil
}

// Eventually fails the test unless cond comes true within timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(timeout, cond) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// Must fails the test on an error, for the rig's calls that return one.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
