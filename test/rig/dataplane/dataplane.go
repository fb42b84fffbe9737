package dataplane

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

// dataplaneEnv names a directory holding the data-plane binaries, instead of building them.
const dataplaneEnv = "KUBE_FIP_DATAPLANE"

// Dataplane is the real data plane of a guest cluster, built by scripts/build-dataplane from the
// Go module proxy: kube-vip at the release the default values name, a kube-vip of the generation
// before v0.9.0, and kube-vip-cloud-provider.
type Dataplane struct {
	Dir string
	// Versions is what the build recorded: one "<binary> <module> <version>" a line.
	Versions string
}

// Kubevip is the kube-vip binary pinned in scripts/dataplane/kube-vip.
func (d Dataplane) Kubevip() string { return filepath.Join(d.Dir, "kube-vip") }

// KubevipBefore09 is the kube-vip binary pinned in scripts/dataplane/kube-vip-v0.7.
func (d Dataplane) KubevipBefore09() string { return filepath.Join(d.Dir, "kube-vip-v0.7") }

// Provider is the kube-vip-cloud-provider binary.
func (d Dataplane) Provider() string { return filepath.Join(d.Dir, "kube-vip-cloud-provider") }

// BuildDataplane returns the data plane: KUBE_FIP_DATAPLANE when set, otherwise what
// scripts/build-dataplane reports, building it on first use (its progress goes to stderr).
func BuildDataplane() (Dataplane, error) {
	dir, err := rig.BuiltDir(dataplaneEnv, "build-dataplane")
	if err != nil {
		return Dataplane{}, err
	}
	versions, err := os.ReadFile(filepath.Join(dir, "VERSIONS"))
	if err != nil {
		return Dataplane{}, fmt.Errorf("%s is not a data plane built by scripts/build-dataplane: %w", dir, err)
	}
	return Dataplane{Dir: dir, Versions: string(versions)}, nil
}

// ContainerEnv is a rendered container's environment as the kubelet would give it: values as
// they are, and each fieldRef from fields (for example spec.nodeName). Anything else a pod
// resolves at run time is refused, so a test never runs a workload with a guessed environment.
func ContainerEnv(c corev1.Container, fields map[string]string) ([]string, error) {
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("container %s takes envFrom, which a test cannot resolve", c.Name)
	}
	var env []string
	for _, e := range c.Env {
		value := e.Value
		if e.ValueFrom != nil {
			if e.ValueFrom.FieldRef == nil {
				return nil, fmt.Errorf("container %s: env %s comes from something other than a field", c.Name, e.Name)
			}
			v, ok := fields[e.ValueFrom.FieldRef.FieldPath]
			if !ok {
				return nil, fmt.Errorf("container %s: env %s comes from field %s, which the test does not provide", c.Name, e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			value = v
		}
		env = append(env, e.Name+"="+value)
	}
	return env, nil
}

// PodKubeconfig writes home/.kube/config: the ServiceAccount namespace/name's credentials for the
// guest API server, as a pod of that ServiceAccount gets them, with the server at host when it is
// not empty (a forwarder into a network namespace). kube-vip and kube-vip-cloud-provider, out of a
// cluster, read $HOME/.kube/config.
func PodKubeconfig(admin *rest.Config, namespace, name, home, host string) (string, error) {
	dir := filepath.Join(home, ".kube")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "config")
	if err := controlplane.ServiceAccountKubeconfig(admin, namespace, name, path, time.Hour); err != nil {
		return "", err
	}
	if host == "" {
		return path, nil
	}
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return "", err
	}
	for _, c := range kc.Clusters {
		c.Server = host
	}
	return path, clientcmd.WriteToFile(*kc, path)
}

// StartIn runs binary inside the network namespace ns (or here, with ns < 0) with exactly env and
// HOME=home, like StartOperator otherwise.
func StartIn(ns netns.NsHandle, binary string, echo io.Writer, home string, env []string, args ...string) (*controlplane.Process, error) {
	cmd := exec.Command(binary, args...)
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}, env...)
	// The kill reaches the child when the thread that started it exits: a test that dies takes its
	// data plane with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	start := cmd.Start
	if ns >= 0 {
		start = func() error { return In(ns, cmd.Start) }
	}
	return controlplane.StartProcess(cmd, echo, start)
}

// Forward serves a listener on 127.0.0.1 inside ns and forwards every connection to target, an
// address of this namespace: how a process in ns reaches a guest API server on loopback here.
func Forward(ctx context.Context, ns netns.NsHandle, target string) (string, error) {
	var ln net.Listener
	if err := In(ns, func() (err error) {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		return "", err
	}
	go func() {
		<-ctx.Done()
		_ = ln.Close()
	}()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := (&net.Dialer{}).DialContext(ctx, "tcp", target)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in); _ = out.(*net.TCPConn).CloseWrite() }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return ln.Addr().String(), nil
}

// ListenIn opens a TCP listener inside ns.
func ListenIn(ns netns.NsHandle, addr string) (net.Listener, error) {
	var ln net.Listener
	err := In(ns, func() (err error) {
		ln, err = net.Listen("tcp", addr)
		return err
	})
	return ln, err
}

// DialIn connects from inside ns.
func DialIn(ctx context.Context, ns netns.NsHandle, addr string) (net.Conn, error) {
	var c net.Conn
	err := In(ns, func() (err error) {
		c, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		return err
	})
	return c, err
}
