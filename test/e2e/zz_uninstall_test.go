package e2e

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
)

// namespace is a Namespace object named name.
func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// TestUninstallRunsTheCleanupJob (last: it takes the operator away): helm uninstall runs the
// chart's pre-delete hook as a real Job pod, which completes, and leaves what the README says with
// the default cleanup.onUninstall=keep and cleanup.guests=clean: the operator's pods gone, every
// FloatingIP and FloatingIPRange still there with its address, none with the operator's
// finalizers; and in the guest, reached by the Job's pod through Rancher's cluster proxy, no
// release of the operator's, no key of its in kube-vip-cloud-provider's ConfigMap, and the
// Harvester cloud provider's kube-vip given its nodes back.
func TestUninstallRunsTheCleanupJob(t *testing.T) {
	s := current(t)
	ctx := context.Background()
	before, err := s.fips.FloatingIP().List("", metav1.ListOptions{})
	rig.Must(t, err)
	w, err := s.mgmtKube.BatchV1().Jobs(operatorNS).Watch(ctx, metav1.ListOptions{})
	rig.Must(t, err)
	var mu sync.Mutex
	var succeeded []string
	go func() {
		for ev := range w.ResultChan() {
			if j, ok := ev.Object.(*batchv1.Job); ok && ev.Type != watch.Deleted && j.Status.Succeeded > 0 {
				mu.Lock()
				if !slices.Contains(succeeded, j.Name) {
					succeeded = append(succeeded, j.Name)
				}
				mu.Unlock()
			}
		}
	}()
	cfg, err := helm(s.mgmt, operatorNS)
	rig.Must(t, err)
	un := action.NewUninstall(cfg)
	un.Wait, un.Timeout = true, 3*time.Minute
	began := time.Now()
	if _, err := un.Run("kube-fip-operator"); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	w.Stop()
	t.Logf("uninstalled in %s", time.Since(began).Round(100*time.Millisecond))
	mu.Lock()
	if !slices.Contains(succeeded, "kube-fip-operator-cleanup") {
		t.Errorf("the clean-up Job did not complete as a pod (Jobs that succeeded: %v)", succeeded)
	}
	mu.Unlock()
	rig.Eventually(t, time.Minute, "no operator pod left", func() bool { return len(s.operatorPods(t)) == 0 })
	after, err := s.fips.FloatingIP().List("", metav1.ListOptions{})
	rig.Must(t, err)
	if len(after.Items) != len(before.Items) {
		t.Errorf("%d FloatingIPs after the uninstall; there were %d", len(after.Items), len(before.Items))
	}
	for _, x := range after.Items {
		if x.Status.IPAddress == "" || slices.Contains(x.Finalizers, v1.FloatingIPFinalizer) {
			t.Errorf("FloatingIP %s/%s after the uninstall: address %q, finalizers %v", x.Namespace, x.Name, x.Status.IPAddress, x.Finalizers)
		}
	}
	ranges, err := s.fips.FloatingIPRange().List(metav1.ListOptions{})
	rig.Must(t, err)
	for _, r := range ranges.Items {
		if slices.Contains(r.Finalizers, v1.RangeFinalizer) {
			t.Errorf("FloatingIPRange %s keeps the operator's finalizer", r.Name)
		}
	}

	records, err := s.guestKube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
	rig.Must(t, err)
	for _, r := range records.Items {
		if name := r.Labels["name"]; name == "kube-vip" || name == "kube-vip-cloud-provider" {
			t.Errorf("release record %s/%s left in the guest", r.Namespace, r.Name)
		}
	}
	if _, err := s.guestKube.AppsV1().DaemonSets("kube-system").Get(ctx, chartvalues.KubevipNameOverride, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the operator's kube-vip DaemonSet after the uninstall: %v; want it gone", err)
	}
	if cm, err := s.guestKube.CoreV1().ConfigMaps("kube-system").Get(ctx, kubevipconfig.KubevipConfigMap, metav1.GetOptions{}); err == nil && cm.Data[kubevipconfig.GlobalCIDRKey] != "" {
		t.Errorf("kube-system/kubevip after the uninstall still has cidr-global %q", cm.Data[kubevipconfig.GlobalCIDRKey])
	}
	if ds, err := s.guestKube.AppsV1().DaemonSets(kubevipconfig.HarvesterDaemonSetNamespace).Get(ctx, kubevipconfig.HarvesterDaemonSetName, metav1.GetOptions{}); err == nil {
		if _, still := ds.Spec.Template.Spec.NodeSelector[kubevipconfig.DisabledNodeSelectorKey]; still {
			t.Error("Harvester's kube-vip still kept off the nodes after the uninstall")
		}
	}
}
