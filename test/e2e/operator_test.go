package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubefip/kube-fip-operator/test/rig"
)

// operatorPods are the operator's pods as the chart's Deployment made them.
func (s *suite) operatorPods(t *testing.T) []corev1.Pod {
	t.Helper()
	sel := labels.Set{"app.kubernetes.io/name": "kube-fip-operator"}.String()
	list, err := s.mgmtKube.CoreV1().Pods(operatorNS).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Labels["job-name"] == "" {
			out = append(out, p)
		}
	}
	return out
}

// TestOperatorRunsAsTheChartSays: the operator's pods, as the chart installed with Rancher's
// default values runs them, are Ready and stay Ready without a restart; each runs as uid 65532
// (the process as the kernel sees it), with a read-only root filesystem and no capabilities, and
// Helm's caches land on the emptyDir at /tmp.
func TestOperatorRunsAsTheChartSays(t *testing.T) {
	s := current(t)
	pods := s.operatorPods(t)
	if len(pods) == 0 {
		t.Fatal("no operator pod")
	}
	for _, p := range pods {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if !ready || p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s is %s, Ready=%t", p.Name, p.Status.Phase, ready)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount != 0 {
				t.Errorf("pod %s container %s restarted %d times", p.Name, cs.Name, cs.RestartCount)
			}
		}
	}
	// The process itself, as the host's kernel runs it.
	pid := processOf(t, "kube-fip-operator", pods[0].UID)
	status := readProc(t, pid, "status")
	for _, want := range []string{"Uid:\t65532\t65532\t65532\t65532", "CapEff:\t0000000000000000", "NoNewPrivs:\t1"} {
		if !strings.Contains(status, want) {
			t.Errorf("the operator process (pid %s) status lacks %q:\n%s", pid, want, grepLines(status, strings.Fields(want)[0]))
		}
	}
	mounts := readProc(t, pid, "mountinfo")
	root, tmp := mountOf(mounts, "/"), mountOf(mounts, "/tmp")
	if !strings.Contains(root, " ro,") && !strings.HasPrefix(strings.Fields(root + " x x x x x")[5], "ro") {
		t.Errorf("the operator's root filesystem is not read-only: %s", root)
	}
	if !strings.Contains(tmp, "kubernetes.io~empty-dir") {
		t.Errorf("/tmp of the operator is not the chart's emptyDir: %q", tmp)
	}
	// The Go runtime's memory limit follows the container's: the Downward API hands the process
	// the container's limits.memory, and the operator derives its limit from it.
	environ := strings.Split(readProc(t, pid, "environ"), "\x00")
	if !slices.Contains(environ, "CONTAINER_MEMORY_LIMIT=536870912") || !slices.Contains(environ, "MEMORY_LIMIT_RATIO=0.75") || !slices.Contains(environ, "GOGC=50") {
		t.Errorf("the operator's environment lacks the container's memory limit (512Mi), the ratio or GOGC: %q",
			[]string{grepLines(strings.Join(environ, "\n"), "CONTAINER_MEMORY_LIMIT"), grepLines(strings.Join(environ, "\n"), "MEMORY_LIMIT_RATIO"), grepLines(strings.Join(environ, "\n"), "GOGC")})
	}
	logs, err := s.mgmtKube.CoreV1().Pods(pods[0].Namespace).GetLogs(pods[0].Name, &corev1.PodLogOptions{}).DoRaw(context.Background())
	if err != nil || !strings.Contains(string(logs), "Go runtime memory limit: 384 MiB, 75% of the container's limit of 512 MiB") {
		t.Errorf("the operator's log does not say it derived its memory limit from the container's (%v)", err)
	}
	// Helm's cache directory is there, written by the operator as it installed the guest charts.
	rig.Eventually(t, 3*time.Minute, "Helm's files on the emptyDir", func() bool {
		entries, err := os.ReadDir(filepath.Join("/proc", pid, "root", "tmp"))
		return err == nil && len(entries) > 0
	})
}

// processOf finds the host pid of the process running binary (by its executable's name) in the
// pod of uid, by the pod's cgroup: another pod's process of the same binary (one of an earlier
// ReplicaSet, still exiting) is not it.
func processOf(t *testing.T, binary string, uid types.UID) string {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || filepath.Base(exe) != binary {
			continue
		}
		cgroup, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err == nil && (strings.Contains(string(cgroup), "pod"+string(uid)) ||
			strings.Contains(string(cgroup), "pod"+strings.ReplaceAll(string(uid), "-", "_"))) {
			return e.Name()
		}
	}
	t.Fatalf("no process runs %s in pod %s", binary, uid)
	return ""
}

func readProc(t *testing.T, pid, file string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", pid, file))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// mountOf is the mountinfo line of the mount point at path.
func mountOf(mountinfo, path string) string {
	var last string
	for _, line := range strings.Split(mountinfo, "\n") {
		if f := strings.Fields(line); len(f) > 5 && f[4] == path {
			last = line
		}
	}
	return last
}

func grepLines(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
