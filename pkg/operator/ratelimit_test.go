package operator

import "testing"

// TestRateLimiter: no client-side limit by default, so a burst of requests is never held back by
// the operator itself; a QPS, when asked for, is enforced, with twice the QPS as burst by default.
func TestRateLimiter(t *testing.T) {
	none := rateLimiter(0, 0)
	for i := 0; i < 100000; i++ {
		if !none.TryAccept() {
			t.Fatalf("without a limit, request %d was held back", i)
		}
	}
	for _, tc := range []struct {
		qps   float32
		burst int
		want  int
	}{{5, 0, 10}, {5, 3, 3}, {0.2, 0, 1}} {
		l := rateLimiter(tc.qps, tc.burst)
		got := 0
		for l.TryAccept() {
			got++
		}
		if got != tc.want {
			t.Errorf("qps %v, burst %d: %d requests at once; want %d", tc.qps, tc.burst, got, tc.want)
		}
	}
}
