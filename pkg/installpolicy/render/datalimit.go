package render

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// RLIMIT_DATA counts every private writable mapping of a process, not only the heap a render
// grows. A binary built with cgo starts its threads with glibc, which maps each thread's stack
// (RLIMIT_STACK, 8 MiB by default) as such data: a render process that a loaded machine had
// start a dozen threads was over a limit of 128 MiB with 95 MiB resident, and the pinned charts
// were refused. So the limit is the data the process holds when the render starts, threads
// included, plus the budget, plus, in a build with cgo, the stacks of spareThreads threads the
// runtime may start while it renders. A build without cgo takes its threads' stacks from its own
// heap, and the budget holds exactly.

// spareThreads is how many threads a render process may start while it renders (in a build with
// cgo, each maps a stack): the template runs on one, the runtime's collector and monitor need a
// few.
const spareThreads = 8

// dataLimit is the RLIMIT_DATA that lets the running process grow its data by memory.
func dataLimit(memory int64) (int64, error) {
	held, err := dataHeld()
	if err != nil {
		return 0, err
	}
	limit := held + memory
	if builtWithCgo {
		limit += spareThreads * threadStack()
	}
	return limit, nil
}

// dataHeld is the data the process has mapped now: VmData of /proc/self/status.
func dataHeld() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lines := bufio.NewScanner(io.LimitReader(f, 64<<10))
	for lines.Scan() {
		if v, ok := bytes.CutPrefix(lines.Bytes(), []byte("VmData:")); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(v)), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("reading VmData %q: %w", v, err)
			}
			return kib << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/self/status has no VmData")
}

// threadStack is the stack glibc maps for a new thread: RLIMIT_STACK's soft limit, and where that
// is unlimited or unusually large, 32 MiB.
func threadStack() int64 {
	const fallback = 32 << 20
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_STACK, &l); err != nil || l.Cur == 0 || l.Cur > fallback {
		return fallback
	}
	return int64(l.Cur)
}
