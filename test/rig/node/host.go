package node

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/kubefip/kube-fip-operator/test/rig"
)

// assets are the programs a cluster runs.
type assets struct {
	etcd, apiserver                              string
	kubelet, controllerManager, scheduler, proxy string
	containerd                                   string
}

// NodeEnv names the directory scripts/build-node built the node components into; make test sets
// it.
const NodeEnv = "KUBE_FIP_NODE"

// findAssets locates the control plane (KUBEBUILDER_ASSETS, else scripts/build-controlplane), the
// node components (KUBE_FIP_NODE, else scripts/build-node), and Debian's containerd, runc, ctr,
// iptables and CNI plugins (scripts/install-node-deps installs them).
func findAssets() (assets, error) {
	cp, err := rig.BuiltDir("KUBEBUILDER_ASSETS", "build-controlplane")
	if err != nil {
		return assets{}, err
	}
	nodeDir, err := rig.BuiltDir(NodeEnv, "build-node")
	if err != nil {
		return assets{}, err
	}
	a := assets{etcd: filepath.Join(cp, "etcd"), apiserver: filepath.Join(cp, "kube-apiserver"),
		kubelet: filepath.Join(nodeDir, "kubelet"), controllerManager: filepath.Join(nodeDir, "kube-controller-manager"),
		scheduler: filepath.Join(nodeDir, "kube-scheduler"), proxy: filepath.Join(nodeDir, "kube-proxy")}
	for _, p := range []string{a.etcd, a.apiserver, a.kubelet, a.controllerManager, a.scheduler, a.proxy} {
		if _, err := os.Stat(p); err != nil {
			return assets{}, err
		}
	}
	if err := HostTools(); err != nil {
		return assets{}, err
	}
	a.containerd, _ = exec.LookPath("containerd")
	return a, nil
}

// HostTools reports what of Debian's node packages is missing, naming the script that installs it.
func HostTools() error {
	var missing []string
	for _, tool := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "conntrack"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "portmap", "loopback"} {
		if _, err := os.Stat(filepath.Join("/usr/lib/cni", plugin)); err != nil {
			missing = append(missing, "/usr/lib/cni/"+plugin)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s missing: run scripts/install-node-deps (as root)", strings.Join(missing, ", "))
	}
	return nil
}

// freePort is a loopback port nothing listens on right now.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// cgroupHierarchies are the mounted cgroup v1 hierarchies (this machine's kubelet runs with
// cgroupfs on v1).
func cgroupHierarchies() ([]string, error) {
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join("/sys/fs/cgroup", e.Name()))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no cgroup v1 hierarchy under /sys/fs/cgroup")
	}
	return out, nil
}

// makeCgroupRoot creates the cluster's cgroup root in every hierarchy, with the cpus and memory
// nodes of its parent, as a new cpuset takes none.
func makeCgroupRoot(root string) error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		dir := filepath.Join(h, root)
		if err := os.MkdirAll(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if parent, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), parent, 0o644); err != nil {
					return fmt.Errorf("copying %s to %s: %w", f, dir, err)
				}
			}
		}
	}
	return nil
}

// removeCgroupRoot kills what is left in the cluster's cgroups and removes them, deepest first.
func removeCgroupRoot(root string) {
	hs, err := cgroupHierarchies()
	if err != nil {
		return
	}
	for _, h := range hs {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, d := range dirs {
			killTasks(filepath.Join(d, "cgroup.procs"))
			_ = syscall.Rmdir(d)
		}
	}
}

func killTasks(procs string) {
	f, err := os.Open(procs)
	if err != nil {
		return
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		var pid int
		if _, err := fmt.Sscan(s.Text(), &pid); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// killShims ends containerd's shims of the cluster (their command line names its socket).
func killShims(socket string) {
	if socket == "" {
		return
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), "containerd-shim") && strings.Contains(string(cmdline), socket) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// unmountUnder detaches every mount below dir (pods' volumes, containerd's snapshots), deepest
// first.
func unmountUnder(dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			points = append(points, fields[4])
		}
	}
	f.Close()
	sort.Sort(sort.Reverse(sort.StringSlice(points)))
	for _, p := range points {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}
