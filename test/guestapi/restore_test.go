package guestapi

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/pkg/helminstall"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// TestKeptReleaseIsRestored: a release kept at its revision (kubevipUpdate off) gets back what the
// guest lost of it: its DaemonSet deleted, then its image edited, are put back as the revision has
// them, with the objects named; a field the revision does not set is left as someone set it; and
// nothing is put back from a record the operator does not remember applying.
func TestKeptReleaseIsRestored(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.client(t, "token-1")
	repo := chartrepo.ChartRepoForTest(t, chartrepo.KubevipChart("0.1.0"))
	in := newInstaller(t)
	rel := helminstall.Release{Namespace: "kube-system", Name: "kube-vip", Chart: "kube-vip", RepoURL: repo.URL, Plan: testPlan(t, guestchart.Kubevip, "", nil)}
	res, err := in.Ensure(ctx, c, rel)
	if err != nil || res.Outcome != helminstall.Installed {
		t.Fatalf("install = %v, %v", res.Outcome, err)
	}
	rel.Trusted = []string{res.Applied.Digest}
	dss := r.direct.AppsV1().DaemonSets("kube-system")
	installed, err := dss.Get(ctx, chartvalues.KubevipNameOverride, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	image := installed.Spec.Template.Spec.Containers[0].Image

	if res, err := in.Ensure(ctx, c, rel); err != nil || res.Outcome != helminstall.Unchanged {
		t.Fatalf("a pass over the release as installed = %v %v, %v; want unchanged", res.Outcome, res.Restored, err)
	}

	if err := dss.Delete(ctx, chartvalues.KubevipNameOverride, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err = in.Ensure(ctx, c, rel)
	if err != nil || res.Outcome != helminstall.Restored || len(res.Restored) != 1 || !strings.Contains(res.Restored[0], "DaemonSet kube-system/kube-fip-kube-vip (missing)") {
		t.Fatalf("a pass after the DaemonSet was deleted = %v %q, %v; want it restored as missing", res.Outcome, res.Restored, err)
	}
	back, err := dss.Get(ctx, chartvalues.KubevipNameOverride, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the DaemonSet is not back: %v", err)
	}
	if back.Spec.Template.Spec.Containers[0].Image != image || back.Annotations["meta.helm.sh/release-name"] != "kube-vip" || back.Labels["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("the DaemonSet put back has image %s, annotations %v, labels %v; want %s and Helm's ownership of release kube-vip",
			back.Spec.Template.Spec.Containers[0].Image, back.Annotations, back.Labels, image)
	}
	if res.Applied == nil || res.Applied.Revision != 1 {
		t.Errorf("restored as revision %+v; want revision 1, no new one", res.Applied)
	}

	back.Spec.Template.Spec.Containers[0].Image = "registry.invalid/kube-vip:edited"
	back.Spec.Template.Spec.Containers[0].Env = append(back.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "vip_added", Value: "x"})
	back.Annotations["someone.example/note"] = "kept"
	if _, err := dss.Update(ctx, back, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err = in.Ensure(ctx, c, rel)
	if err != nil || res.Outcome != helminstall.Restored || len(res.Restored) != 1 || !strings.Contains(res.Restored[0], "(changed: spec.template.spec.containers)") {
		t.Fatalf("a pass after the image was edited = %v %q, %v; want the containers restored", res.Outcome, res.Restored, err)
	}
	again, err := dss.Get(ctx, chartvalues.KubevipNameOverride, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Spec.Template.Spec.Containers[0].Image; got != image {
		t.Errorf("image after the restore = %s; want %s", got, image)
	}
	if env := envOf(again.Spec.Template.Spec.Containers[0].Env); env["vip_added"] != "" {
		t.Errorf("a variable added to the container stays after the restore: %v", env)
	}
	if again.Annotations["someone.example/note"] != "kept" {
		t.Errorf("an annotation the revision does not set was not left as it was: %v", again.Annotations)
	}
	if res, err := in.Ensure(ctx, c, rel); err != nil || res.Outcome != helminstall.Unchanged {
		t.Errorf("a pass after the restore = %v %q, %v; want unchanged", res.Outcome, res.Restored, err)
	}

	if err := dss.Delete(ctx, chartvalues.KubevipNameOverride, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rel.Trusted = nil
	if res, err := in.Ensure(ctx, c, rel); err != nil || res.Outcome != helminstall.Unchanged {
		t.Errorf("a pass over a record the operator does not remember = %v %q, %v; want unchanged", res.Outcome, res.Restored, err)
	}
	if _, err := dss.Get(ctx, chartvalues.KubevipNameOverride, metav1.GetOptions{}); err == nil {
		t.Errorf("the DaemonSet was put back from a record the operator does not remember applying")
	}
}
