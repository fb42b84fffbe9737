package rig

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
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

// UntilEvery is Until looking again every interval (apimachinery's poller, so the rig has no
// loop of its own): less often where looking is costly, such as
// listing tens of thousands of objects.
func UntilEvery(interval, timeout time.Duration, what string, stop func() error, cond func() (bool, error)) error {
	var last, stopped error
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		if ok {
			return true, nil
		}
		if err != nil {
			last = err
		}
		if stop != nil {
			stopped = stop()
		}
		return false, stopped
	})
	switch {
	case err == nil:
		return nil
	case stopped != nil:
		return fmt.Errorf("%s: %w", what, stopped)
	case last != nil:
		return fmt.Errorf("%s: not within %s (last: %v)", what, timeout, last)
	default:
		return fmt.Errorf("%s: not within %s", what, timeout)
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
