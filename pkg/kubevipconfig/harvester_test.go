package kubevipconfig

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
