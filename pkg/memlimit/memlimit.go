// Package memlimit gives the Go runtime a soft memory limit that follows the container's own
// memory limit, so that raising the limit of a large installation raises the runtime's with it:
// a fixed GOMEMLIMIT below the live heap would make the collector run flat out instead.
package memlimit

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
)

// DefaultRatio is the share of the container's memory limit the runtime may hold before its
// collector works harder: the rest is for what the runtime does not count (the executable's
// pages, C allocations, the kernel's page cache charged to the container).
const DefaultRatio = 0.75

// minLimit is the least soft limit set: below it the collector would run without pause.
const minLimit = 32 << 20

// Decide is the soft limit for a container whose memory limit is containerLimit (the bytes the
// Downward API's resourceFieldRef limits.memory writes) at ratio: 0 when containerLimit is empty.
func Decide(containerLimit string, ratio float64) (int64, error) {
	containerLimit = strings.TrimSpace(containerLimit)
	if containerLimit == "" {
		return 0, nil
	}
	if math.IsNaN(ratio) || ratio <= 0 || ratio > 1 {
		return 0, fmt.Errorf("the ratio %v is not above 0 and at most 1", ratio)
	}
	limit, err := strconv.ParseInt(containerLimit, 10, 64)
	if err != nil || limit <= 0 {
		return 0, fmt.Errorf("the container's memory limit %q is not a number of bytes", containerLimit)
	}
	soft := int64(float64(limit) * ratio)
	if soft < minLimit {
		soft = min(int64(minLimit), limit)
	}
	return soft, nil
}

// Apply sets the runtime's soft limit from the container's (Decide), unless GOMEMLIMIT was given
// (getenv reads the environment), which the runtime has applied itself. It returns what is in
// force, for the log.
func Apply(getenv func(string) string, containerLimit string, ratio float64) (string, error) {
	if v := getenv("GOMEMLIMIT"); v != "" {
		return fmt.Sprintf("GOMEMLIMIT %s, as given", v), nil
	}
	soft, err := Decide(containerLimit, ratio)
	if err != nil || soft == 0 {
		return "none (no container memory limit given)", err
	}
	debug.SetMemoryLimit(soft)
	return fmt.Sprintf("%d MiB, %.0f%% of the container's limit of %s MiB", soft>>20, ratio*100, mib(containerLimit)), nil
}

func mib(bytes string) string {
	n, _ := strconv.ParseInt(strings.TrimSpace(bytes), 10, 64)
	return strconv.FormatInt(n>>20, 10)
}

// GCPercent says what the collector's GOGC is (getenv reads the environment), for the log: the
// runtime reads GOGC itself.
func GCPercent(getenv func(string) string) string {
	if v := strings.TrimSpace(getenv("GOGC")); v != "" {
		return "GOGC " + v
	}
	return "GOGC 100 (Go's default)"
}
