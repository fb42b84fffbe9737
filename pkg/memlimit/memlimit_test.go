package memlimit

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

// TestDecide: the soft limit is the container's limit times the ratio, never below 32 MiB (nor
// above the container's limit); no container limit sets none; bad input is an error, not a limit.
func TestDecide(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit string
		ratio float64
		want  int64
		err   bool
	}{
		{"536870912", 0.75, 402653184, false}, // 512Mi → 384Mi
		{" 1073741824\n", 0.5, 536870912, false},
		{"", 0.75, 0, false},
		{"16777216", 0.75, 16777216, false}, // 16Mi: the floor is capped at the limit
		{"67108864", 0.1, 32 << 20, false},  // 64Mi at 10%: the 32Mi floor
		{"512Mi", 0.75, 0, true},
		{"-1", 0.75, 0, true},
		{"536870912", 0, 0, true},
		{"536870912", 1.5, 0, true},
		{"536870912", math.NaN(), 0, true},
	} {
		got, err := Decide(tc.limit, tc.ratio)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("Decide(%q, %v) = %d, %v; want %d (error %v)", tc.limit, tc.ratio, got, err, tc.want, tc.err)
		}
	}
}

// TestApply: a given GOMEMLIMIT wins and nothing is changed; otherwise the runtime's limit is the
// decided one.
func TestApply(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })

	got, err := Apply(func(k string) string { return map[string]string{"GOMEMLIMIT": "48MiB"}[k] }, "536870912", 0.75)
	if err != nil || !strings.Contains(got, "48MiB") || debug.SetMemoryLimit(-1) != before {
		t.Errorf("with GOMEMLIMIT given: %q, %v; limit %d, want it untouched", got, err, debug.SetMemoryLimit(-1))
	}
	got, err = Apply(func(string) string { return "" }, "536870912", 0.75)
	if err != nil || debug.SetMemoryLimit(-1) != 402653184 || !strings.Contains(got, "384 MiB") {
		t.Errorf("derived: %q, %v; limit %d, want 384 MiB", got, err, debug.SetMemoryLimit(-1))
	}
}

func TestGCPercent(t *testing.T) {
	for env, want := range map[string]string{"50": "GOGC 50", " 200 ": "GOGC 200", "": "GOGC 100 (Go's default)"} {
		if got := GCPercent(func(k string) string { return map[string]string{"GOGC": env}[k] }); got != want {
			t.Errorf("GOGC %q: %q, want %q", env, got, want)
		}
	}
}
