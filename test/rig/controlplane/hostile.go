package controlplane

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PID is the operating system's id of the running operator process, for reading what /proc says
// about it.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// PeakRSS is the most memory the running process has held resident since it started (VmHWM of
// /proc/<pid>/status), in bytes. It is what a container's memory limit is held against.
func (p *Process) PeakRSS() (int64, error) {
	return p.Status("VmHWM")
}

// Status is one memory figure of the running process in /proc/<pid>/status (VmHWM, RssAnon,
// RssFile, ...), in bytes.
func (p *Process) Status(field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.PID()))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		// "VmHWM:	  123456 kB"
		rest, ok := strings.CutPrefix(lines.Text(), field+":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s of process %d: %w", field, p.PID(), err)
		}
		return kb << 10, nil
	}
	if err := lines.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", p.PID(), field)
}
