package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubefip/kube-fip-operator/test/rig"
	rigsuite "github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// diagnose, registered by need, tells what the clusters looked like when a test failed: the
// guest's FloatingIPs, the operator's log, and the pods and Events of both clusters.
func (s *suite) diagnose(t *testing.T) {
	if !t.Failed() || s.fips == nil {
		return
	}
	var b strings.Builder
	if list, err := s.fips.FloatingIP().List("", metav1.ListOptions{}); err == nil {
		for i := range list.Items {
			fmt.Fprintf(&b, "FloatingIP %s/%s: %s\n", list.Items[i].Namespace, list.Items[i].Name, rigsuite.StatusText(&list.Items[i]))
		}
	}
	for _, p := range s.operatorPods(t) {
		fmt.Fprintf(&b, "operator pod %s log ends:\n%s\n", p.Name, podLog(s.mgmtKube, p, 40))
	}
	for name, kube := range map[string]kubernetes.Interface{"management": s.mgmtKube, "guest": s.guestKube} {
		pods, err := kube.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "%s pod %s/%s on %q: %s %s\n", name, p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, containerStates(p))
		}
		events, err := kube.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning {
				fmt.Fprintf(&b, "%s event %s %s/%s %s: %s\n", name, e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
	}
	t.Logf("the clusters at the failure:\n%s", b.String())
}

func podLog(kube kubernetes.Interface, p corev1.Pod, lines int64) string {
	data, err := kube.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: &lines}).DoRaw(context.Background())
	if err != nil {
		return err.Error()
	}
	return rig.LastLines(string(data), int(lines))
}

func containerStates(p corev1.Pod) string {
	var out []string
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil:
			out = append(out, fmt.Sprintf("%s waiting %s: %s", c.Name, c.State.Waiting.Reason, c.State.Waiting.Message))
		case c.State.Terminated != nil:
			out = append(out, fmt.Sprintf("%s terminated %s (%d)", c.Name, c.State.Terminated.Reason, c.State.Terminated.ExitCode))
		default:
			out = append(out, fmt.Sprintf("%s running, ready %t, restarts %d", c.Name, c.Ready, c.RestartCount))
		}
	}
	return strings.Join(out, "; ")
}
