// The operator process of the tests, and the chart stand-ins it may install. Those stand-ins
// mirror upstream github.com/kube-vip/helm-charts: chart kube-vip 0.9.9 (tag kube-vip-0.9.9) and
// chart kube-vip-cloud-provider 0.2.10 (tag kube-vip-cloud-provider-0.2.10), as
// test/rig/chartrepo/charts/README.md records.

package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartsource"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// BuildOperator builds the operator binary into dir and returns its path. Tests run the real
// binary, as a cluster would, rather than calling into its packages. When make test has packaged
// this tree (KUBE_FIP_PACKAGED names it), the release binary it built for this machine's
// architecture is the one returned: the tests run what the image ships, and no package links
// another.
func BuildOperator(dir string) (string, error) {
	root, err := rig.RepoRoot()
	if err != nil {
		return "", err
	}
	if os.Getenv("KUBE_FIP_PACKAGED") == root {
		packaged := filepath.Join(root, "bin", "linux-"+runtime.GOARCH, "kube-fip-operator")
		if _, err := os.Stat(packaged); err != nil {
			return "", fmt.Errorf("KUBE_FIP_PACKAGED names this tree, but its release binary is missing: %w", err)
		}
		return packaged, nil
	}
	out := filepath.Join(dir, "kube-fip-operator")
	if err := rig.GoBuild(root, ".", out, "-s -w"); err != nil {
		return "", err
	}
	return out, nil
}

// LoopbackChartSourceArgs are the operator flags that let it install from chart repositories and
// OCI registries served on 127.0.0.1 at any port, as the tests and the development environment
// serve them, besides the upstream sources (plain http is needed for them), and that allow the
// stand-ins of the pinned pair by digest (StandInDigestsArg): the upstream archives cannot be
// fetched here.
func LoopbackChartSourceArgs() []string {
	sources := append(chartsource.DefaultChartSources(), "http://127.0.0.1:*", "oci://127.0.0.1:*")
	return []string{"--allowed-chart-sources=" + strings.Join(sources, ","), "--allow-http-chart-sources", StandInDigestsArg()}
}

// PinnedStandIns are the stand-ins of the pinned chart pair, at the pinned versions. They mirror
// the upstream charts of github.com/kube-vip/helm-charts: chart kube-vip version 0.9.9 (tag
// kube-vip-0.9.9) and chart kube-vip-cloud-provider version 0.2.10 (tag
// kube-vip-cloud-provider-0.2.10), as test/rig/chartrepo/charts/README.md records.
func PinnedStandIns() []*chart.Chart {
	return []*chart.Chart{chartrepo.DefaultChart(guestchart.Kubevip), chartrepo.DefaultChart(guestchart.CloudProvider)}
}

// StandInDigestsArg is --allowed-chart-digests for the stand-ins of the pinned pair (upstream
// kube-vip 0.9.9 and kube-vip-cloud-provider 0.2.10, PinnedStandIns) and charts, a test's variants
// of those stand-ins: the flag's last occurrence wins, so a test that allows more charts passes
// them here.
func StandInDigestsArg(charts ...*chart.Chart) string {
	return chartrepo.AllowDigestsArg(append(PinnedStandIns(), charts...)...)
}

// Process is a running operator binary whose output is kept for inspection.
type Process struct {
	cmd  *exec.Cmd
	logs *lockedBuffer
	done chan struct{}
	err  error
}

// ChartEnv is the environment the operator's own chart (charts/kube-fip-operator, its Deployment)
// gives every operator process whatever its values: lasso's controller metrics on.
func ChartEnv() []string { return []string{"CATTLE_PROMETHEUS_METRICS=true"} }

// StartOperator runs binary with args and ChartEnv followed by env, its output copied to echo (may
// be nil) and kept in memory. The process is in its own process group so that a terminal's Ctrl-C
// reaches only whoever started it, which then stops it in order; it dies with its parent.
func StartOperator(binary string, echo io.Writer, env []string, args ...string) (*Process, error) {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(append(os.Environ(), ChartEnv()...), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return StartProcess(cmd, echo, cmd.Start)
}

// StartProcess starts cmd with start, its output copied to echo (may be nil) and kept.
func StartProcess(cmd *exec.Cmd, echo io.Writer, start func() error) (*Process, error) {
	p := &Process{logs: &lockedBuffer{}, done: make(chan struct{})}
	var out io.Writer = p.logs
	if echo != nil {
		out = io.MultiWriter(p.logs, echo)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	p.cmd = cmd
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Logs returns everything the process printed so far.
func (p *Process) Logs() string { return p.logs.String() }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports, once the process has exited, that it has: a wait on something the process must
// bring about gives up then.
func (p *Process) Exited() error {
	select {
	case <-p.done:
		return errors.New("the process exited")
	default:
		return nil
	}
}

// WaitForLog waits until the output contains substr, the process exits, or timeout passes.
func (p *Process) WaitForLog(ctx context.Context, substr string, timeout time.Duration) error {
	logged := func() (bool, error) { return strings.Contains(p.Logs(), substr), nil }
	// The process's output is complete once it has exited: only then is waiting pointless.
	stop := func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if p.Exited() != nil && !strings.Contains(p.Logs(), substr) {
			return fmt.Errorf("the operator exited (%v)", p.err)
		}
		return nil
	}
	return rig.UntilEvery(50*time.Millisecond, timeout, fmt.Sprintf("the operator logging %q", substr), stop, logged)
}

// Stop sends SIGTERM and waits for the process to exit, killing it after grace.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("the operator did not stop within %s and was killed", grace)
	}
}

// Kill stops the process at once, as a crash would.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
