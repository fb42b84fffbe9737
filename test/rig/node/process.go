package node

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/vishvananda/netns"

	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/dataplane"
)

// process is one program of a cluster, its output in <dir>/<name>.log.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
	// stopped marks a process stopped on purpose, whose end is no failure.
	stopped bool
}

// start runs binary with args in the network namespace ns ("" for the host's), in a process group
// of its own that dies with the test.
func start(dir, ns, name, binary string, args ...string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	if err := In(ns, cmd.Start); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// In runs fn on a thread in network namespace ns (the cluster's NodeNamespace or
// ClientNamespace; none for ""): a connection fn opens goes from there, through what kube-proxy
// programmed, and a process fn starts stays there.
func In(ns string, fn func() error) error {
	if ns == "" {
		return fn()
	}
	target, err := netns.GetFromName(ns)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", ns, err)
	}
	defer target.Close()
	return dataplane.In(target, fn)
}

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process group and waits up to grace, then kills it.
func (p *process) stop(grace time.Duration) {
	if p == nil || p.cmd.Process == nil {
		return
	}
	p.stopped = true
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// tail is the end of the process's log, for a failure message.
func (p *process) tail(lines int) string {
	data, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	return rig.LastLines(string(data), lines)
}

// errExited: a program of the cluster ended while the cluster was starting.
var errExited = errors.New("exited")
