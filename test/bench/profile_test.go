package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

// benchProfiles fetches the Go profiles of one benchmarked operator process into the directory
// $BENCH_PROFILE names: a CPU profile of the first $BENCH_PROFILE_SECONDS (default 20) from its
// start, and heap, blocking, mutex and goroutine profiles once it converged. The operator serves
// them at a loopback port (--profiling-address). Nil when $BENCH_PROFILE is unset: the operator
// then runs without profiling.
//
// The API server's CPU profile for the same window is fetched too (its /debug/pprof, on by
// default): where the time goes when the operator waits on it.
type benchProfiles struct {
	dir, name, addr string
	cpuDone         chan struct{}
	apiDone         chan struct{}
}

func newBenchProfiles(b *testing.B, suffix string) *benchProfiles {
	dir := os.Getenv("BENCH_PROFILE")
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	name := strings.NewReplacer("/", "_", "=", "").Replace(b.Name()) + suffix
	return &benchProfiles{dir: dir, name: name, addr: "127.0.0.1:" + strconv.Itoa(rig.FreePort(b)),
		cpuDone: make(chan struct{}), apiDone: make(chan struct{})}
}

// args are the operator's flags that serve the profiles.
func (p *benchProfiles) args() []string {
	if p == nil {
		return nil
	}
	return []string{"--profiling-address", p.addr}
}

// startCPU fetches the CPU profile in the background, waiting for the server to listen first.
func (p *benchProfiles) startCPU(b *testing.B) {
	if p == nil {
		return
	}
	seconds := 20
	if s := os.Getenv("BENCH_PROFILE_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("BENCH_PROFILE_SECONDS=%q: want a number of seconds", s)
		}
		seconds = n
	}
	go func() {
		defer close(p.apiDone)
		raw, err := shared.Rancher(b).Kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(seconds)).Timeout(time.Duration(seconds+30) * time.Second).DoRaw(context.Background())
		if err == nil {
			err = os.WriteFile(filepath.Join(p.dir, p.name+"-apiserver-cpu.pprof"), raw, 0o644)
		}
		if err != nil {
			fmt.Printf("%s: the API server's CPU profile: %v\n", b.Name(), err)
		}
	}()
	go func() {
		defer close(p.cpuDone)
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := p.fetch(fmt.Sprintf("profile?seconds=%d", seconds), "cpu", time.Duration(seconds+30)*time.Second)
			if err == nil || time.Now().After(deadline) {
				if err != nil {
					fmt.Printf("%s: CPU profile: %v\n", b.Name(), err)
				}
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
}

// snapshot fetches the heap, blocking, mutex and goroutine profiles now and waits for the CPU
// profile to be written.
func (p *benchProfiles) snapshot(b *testing.B) {
	if p == nil {
		return
	}
	for _, kind := range []string{"heap", "block", "mutex", "goroutine"} {
		if err := p.fetch(kind, kind, time.Minute); err != nil {
			b.Fatalf("fetching the operator's %s profile: %v", kind, err)
		}
	}
	<-p.cpuDone
	<-p.apiDone
	fmt.Printf("%s: profiles in %s/%s-*.pprof\n", b.Name(), p.dir, p.name)
}

func (p *benchProfiles) fetch(path, kind string, timeout time.Duration) error {
	client := &http.Client{Timeout: timeout}
	resp, err := client.Get("http://" + p.addr + "/debug/pprof/" + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(p.dir, p.name+"-"+kind+".pprof"), body, 0o644)
}

// clockTicks is the unit of /proc's CPU times (USER_HZ), 100 on every Linux the project runs on.
const clockTicks = 100

// processCPU is the CPU time process p has used so far, user and system, read from /proc.
func processCPU(p *controlplane.Process) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID()))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces: count from its end.
	rest := string(stat)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	fields := strings.Fields(rest)
	// Fields 14 and 15 (utime, stime) are the 12th and 13th after the command name.
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat is short", p.PID())
	}
	return ticks(fields[11], fields[12])
}

// machineCPU is the CPU time every process of the machine has used since boot, user and system
// (nice, irq and softirq included), read from /proc/stat, and the number of CPUs.
func machineCPU() (time.Duration, int, error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	var total time.Duration
	cpus := 0
	for _, line := range strings.Split(string(stat), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) > 7 && fields[0] == "cpu":
			// user nice system idle iowait irq softirq: all but idle and iowait.
			t, err := ticks(fields[1], fields[2], fields[3], fields[6], fields[7])
			if err != nil {
				return 0, 0, err
			}
			total = t
		case len(fields) > 0 && strings.HasPrefix(fields[0], "cpu"):
			cpus++
		}
	}
	return total, cpus, nil
}

func ticks(values ...string) (time.Duration, error) {
	var sum int64
	for _, v := range values {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("a CPU time in /proc: %w", err)
		}
		sum += n
	}
	return time.Duration(sum) * time.Second / clockTicks, nil
}

// statusMiB is one memory figure of process p in /proc/<pid>/status in MiB, or -1 when it cannot
// be read.
func statusMiB(p *controlplane.Process, field string) float64 {
	bytes, err := p.Status(field)
	if err != nil {
		return -1
	}
	return float64(bytes) / (1 << 20)
}
