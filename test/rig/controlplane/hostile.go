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

// userHZ is the unit of the times /proc/<pid>/stat gives: USER_HZ, 100 on every Linux
// architecture's ABI.
const userHZ = 100

// CPUSeconds is the processor time the running process has used so far, in user and system mode
// (utime and stime of /proc/<pid>/stat), in seconds.
func (p *Process) CPUSeconds() (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID()))
	if err != nil {
		return 0, err
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses, so the fields are counted
	// after its last ')'; utime and stime are the 14th and 15th fields.
	i := strings.LastIndexByte(string(data), ')')
	fields := strings.Fields(string(data[i+1:]))
	if i < 0 || len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected %q", p.PID(), data)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", p.PID(), err)
		}
		ticks += n
	}
	return float64(ticks) / userHZ, nil
}
