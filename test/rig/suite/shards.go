package suite

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

// ShardsEnv names the number of shards a package of Shards runs on, DefaultShards when unset.
const ShardsEnv = "KUBE_FIP_TEST_SHARDS"

// DefaultShards is the number of shards when ShardsEnv is unset.
const DefaultShards = 4

// settle is how long, once the tests run side by side, shards go only in the order the tests
// asked for them (Take, TakeEarly): long enough for every test to reach its turn.
const settle = 2 * time.Second

// Shards is a package's control planes for tests that run side by side: API servers on one etcd,
// each under an etcd prefix of its own (controlplane.Environment.StartShard), so that no shard
// sees another's objects, cluster-scoped ones included, with one operator build. A test takes a
// shard for itself (Take) until it ends: the tests of one shard run one after another, each on
// an API server no other test is using.
type Shards struct {
	mu    sync.Mutex
	free  []*Suite
	queue []*claim
	taken map[string]*Suite
	// started is when the first test was ready for a shard; waking says a later look at the queue
	// is due.
	started time.Time
	waking  bool
}

// claim is a test's place in the queue for a shard.
type claim struct {
	early bool
	// ready says the test runs beside the others now (its t.Parallel returned).
	ready bool
	got   chan *Suite
}

// Main is a package's TestMain: it starts the shards and runs the package's tests, as many at once
// as there are shards, and exits with their result. Unless -test.parallel says otherwise, every
// test waits for its shard in Take, so that the shards go in the order Take gives them.
func (s *Shards) Main(m *testing.M) {
	n, err := shardCount()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	Parallel(1000)
	os.Exit(runOn(m, n, func(suites []*Suite) {
		s.free = suites
		s.taken = map[string]*Suite{}
	}, controlplane.Start))
}

// Parallel parses the test flags and, unless -test.parallel was given, lets n tests (or subtests)
// that call t.Parallel run at once: tests that mostly wait for API servers and operators share
// two cores well.
func Parallel(n int) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}

// shardCount is the number of shards ShardsEnv asks for.
func shardCount() (int, error) {
	v := os.Getenv(ShardsEnv)
	if v == "" {
		return DefaultShards, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a number of shards, 1 or more", ShardsEnv, v)
	}
	return n, nil
}

// Take runs test t beside the package's other tests (t.Parallel) on a shard no other test uses
// until t ends, waiting for one to be free, and returns it. Shards go to the tests in the order
// they called Take, those that called TakeEarly first. When t ends the shard is cleared (Clear)
// for the next test. A top-level test calls it first.
func (s *Shards) Take(t *testing.T) *Suite {
	t.Helper()
	return s.take(t, false)
}

// TakeEarly is Take for a test that takes long: it gets a shard before the tests that called Take,
// so that it does not run alone at the end.
func (s *Shards) TakeEarly(t *testing.T) *Suite {
	t.Helper()
	return s.take(t, true)
}

func (s *Shards) take(t *testing.T, early bool) *Suite {
	t.Helper()
	if strings.Contains(t.Name(), "/") {
		t.Fatalf("%s: a subtest runs on its test's shard (Of)", t.Name())
	}
	c := &claim{early: early, got: make(chan *Suite, 1)}
	s.mu.Lock()
	at := len(s.queue)
	if early {
		at = slices.IndexFunc(s.queue, func(q *claim) bool { return !q.early })
		if at < 0 {
			at = len(s.queue)
		}
	}
	s.queue = slices.Insert(s.queue, at, c)
	s.mu.Unlock()

	t.Parallel()
	asked := time.Now()
	s.mu.Lock()
	c.ready = true
	if s.started.IsZero() {
		s.started = time.Now()
	}
	s.dispatch()
	s.mu.Unlock()
	x := <-c.got
	// The test's time as go test reports it includes this wait.
	if waited := time.Since(asked); waited > time.Second {
		t.Logf("waited %s for a shard", waited.Round(100*time.Millisecond))
	}

	s.mu.Lock()
	s.taken[t.Name()] = x
	s.mu.Unlock()
	// Registered first, so it runs last, after every other cleanup of the test: its operators have
	// stopped.
	t.Cleanup(func() {
		x.Clear(t)
		s.mu.Lock()
		delete(s.taken, t.Name())
		s.free = append(s.free, x)
		s.dispatch()
		s.mu.Unlock()
	})
	return x
}

// dispatch gives the free shards to the first ready tests in the queue; in the settle time it
// waits for a test ahead of them that is not ready yet. s.mu is held.
func (s *Shards) dispatch() {
	for len(s.free) > 0 {
		i := slices.IndexFunc(s.queue, func(c *claim) bool { return c.ready })
		if i < 0 {
			return
		}
		if wait := settle - time.Since(s.started); i > 0 && wait > 0 {
			if !s.waking {
				s.waking = true
				time.AfterFunc(wait, func() {
					s.mu.Lock()
					s.waking = false
					s.dispatch()
					s.mu.Unlock()
				})
			}
			return
		}
		c := s.queue[i]
		s.queue = slices.Delete(s.queue, i, i+1)
		c.got <- s.free[0]
		s.free = s.free[1:]
	}
}

// Of returns the shard that t's top-level test took.
func (s *Shards) Of(t testing.TB) *Suite {
	t.Helper()
	x := s.held(t)
	if x == nil {
		t.Fatalf("%s took no shard: its first call is Take", t.Name())
	}
	return x
}

// OfOrTake returns the shard that t's top-level test took, or takes one (Take) for a top-level
// test that has none yet.
func (s *Shards) OfOrTake(t *testing.T) *Suite {
	t.Helper()
	if x := s.held(t); x != nil {
		return x
	}
	return s.Take(t)
}

// held is the shard that t's top-level test took, or nil.
func (s *Shards) held(t testing.TB) *Suite {
	top, _, _ := strings.Cut(t.Name(), "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.taken[top]
}
