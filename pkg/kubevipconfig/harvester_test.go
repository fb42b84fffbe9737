package kubevipconfig

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func harvesterDaemonSet(release string, selector map[string]string) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: HarvesterDaemonSetName, Namespace: HarvesterDaemonSetNamespace,
		Annotations: map[string]string{HarvesterReleaseAnnotation: release}, ResourceVersion: "7"}}
	ds.Spec.Template.Spec.NodeSelector = selector
	return ds
}

// TestHarvesterKubevipRoundTrip: the node selector the operator gives Harvester's kube-vip is the
// one it takes away again, leaving the DaemonSet's own selector as it was; somebody else's
// DaemonSet, or one the operator never changed, is left alone.
func TestHarvesterKubevipRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kube := fake.NewSimpleClientset(harvesterDaemonSet(HarvesterReleaseName, map[string]string{"kubernetes.io/os": "linux"}))
	if res, err := RestoreHarvesterKubevip(ctx, kube.AppsV1()); err != nil || res != DaemonSetNotDisabled {
		t.Fatalf("restore before any change = %v, %v; want DaemonSetNotDisabled", res, err)
	}
	if res, err := DisableHarvesterKubevip(ctx, kube.AppsV1()); err != nil || res != DaemonSetDisabled {
		t.Fatalf("disable = %v, %v", res, err)
	}
	if res, err := RestoreHarvesterKubevip(ctx, kube.AppsV1()); err != nil || res != DaemonSetRestored {
		t.Fatalf("restore = %v, %v; want DaemonSetRestored", res, err)
	}
	ds, err := kube.AppsV1().DaemonSets(HarvesterDaemonSetNamespace).Get(ctx, HarvesterDaemonSetName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sel := ds.Spec.Template.Spec.NodeSelector; len(sel) != 1 || sel["kubernetes.io/os"] != "linux" {
		t.Errorf("node selector after the round trip: %v; want the DaemonSet's own", sel)
	}

	other := fake.NewSimpleClientset(harvesterDaemonSet("someone-else", map[string]string{DisabledNodeSelectorKey: "true"}))
	if res, err := RestoreHarvesterKubevip(ctx, other.AppsV1()); err != nil || res != DaemonSetNotHarvesters {
		t.Errorf("restore of somebody else's DaemonSet = %v, %v; want DaemonSetNotHarvesters", res, err)
	}
	if res, err := RestoreHarvesterKubevip(ctx, fake.NewSimpleClientset().AppsV1()); err != nil || res != DaemonSetAbsent {
		t.Errorf("restore without a DaemonSet = %v, %v; want DaemonSetAbsent", res, err)
	}
}

// TestHarvesterKubevipServesOnlyWithAPodThatStays: Harvester's kube-vip can take over only when a
// pod of its own is ready and not being deleted; the DaemonSet's status, which counts a ready pod
// that is terminating, is not enough.
func TestHarvesterKubevipServesOnlyWithAPodThatStays(t *testing.T) {
	t.Parallel()
	labels := map[string]string{"app.kubernetes.io/name": "kube-vip"}
	pod := func(owner types.UID, ready, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kube-vip-abcde", Namespace: HarvesterDaemonSetNamespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: HarvesterDaemonSetName, UID: owner}}}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp, p.Finalizers = &now, []string{"test/keeps-it"}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want HarvesterKubevip
	}{
		{"a ready pod that stays", pod("ds-uid", true, false), HarvesterKubevipServes},
		{"its only ready pod is being deleted", pod("ds-uid", true, true), HarvesterKubevipStarting},
		{"its pod is not ready", pod("ds-uid", false, false), HarvesterKubevipStarting},
		{"the ready pod is another owner's", pod("other-uid", true, false), HarvesterKubevipStarting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := harvesterDaemonSet(HarvesterReleaseName, nil)
			ds.UID, ds.Spec.Selector = "ds-uid", &metav1.LabelSelector{MatchLabels: labels}
			ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, NumberReady: 1}
			kube := fake.NewSimpleClientset(ds, tc.pod)
			got, why, err := ReadHarvesterKubevip(context.Background(), kube.AppsV1(), kube.CoreV1())
			if err != nil || got != tc.want {
				t.Errorf("ReadHarvesterKubevip = %v (%q), %v; want %v", got, why, err, tc.want)
			}
			if got != HarvesterKubevipServes && why == "" {
				t.Error("no reason given")
			}
		})
	}
}
