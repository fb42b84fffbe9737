package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/backup"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// held is one FloatingIP and the address it holds.
type held struct {
	ns, name, rangeName, addr string
}

func (h held) key() string { return h.ns + "/" + h.name }

// TestRancherBackupRestoreKeepsAddresses takes a Rancher Backups backup with the ResourceSet the
// chart renders, loses every range and FloatingIP (operator stopped, finalizers stripped, objects
// deleted), and restores them from the backup's JSON as rancher-backup does, into a cluster where
// the chart is installed again: the operator runs as the chart's ServiceAccount and serves the
// chart's webhook, whose range rule fails closed. The restore writes as rancher-backup's own
// ServiceAccount and scales the operator's Deployment (the ResourceSet's controllerReference) to 0
// first, its pods stopping before anything is written, as they would; the chart exempts that
// ServiceAccount from the webhook, so the writes go through while no replica could judge them.
// Scaled back up, the operator starts again: every FloatingIP keeps exactly its address, the
// ranges record each address once for the restored object (its new UID), and the next FloatingIP
// gets the one free address in between. The addresses are not the ones a fresh allocation would
// hand out (a freed address below them, a static one above), so a restore that lost them would
// not pass by luck.
func TestRancherBackupRestoreKeepsAddresses(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "c-m-backup1")
	const ns2 = "c-m-backup2"
	f.shard.CreateNamespace(t, ns2)
	f.extraNamespace(ns2)
	p, _ := f.operator()

	f.createRange("backup-v4", "10.191.0.0/28")
	f.createRange("backup-v6", "fd00:191::/120")
	for _, name := range []string{"a", "b", "c", "d"} {
		f.createFIP(name, "backup-v4", "")
		f.waitFIP(name, 30*time.Second, "allocated", suite.Allocated)
	}
	f.createFIP("e", "backup-v4", "10.191.0.12")
	f.createFIPIn(ns2, "x", "backup-v6", "")
	f.createFIPIn(ns2, "y", "backup-v6", "fd00:191::80")
	freed := f.getFIP("b").Status.IPAddress
	if err := f.api.FloatingIP().Delete(f.ns, "b", nil); err != nil {
		t.Fatal(err)
	}
	rig.Eventually(t, 30*time.Second, "FloatingIP b to be released and gone", func() bool {
		_, err := f.api.FloatingIP().Get(f.ns, "b", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	var want []held
	for _, x := range []held{{f.ns, "a", "backup-v4", ""}, {f.ns, "c", "backup-v4", ""}, {f.ns, "d", "backup-v4", ""},
		{f.ns, "e", "backup-v4", ""}, {ns2, "x", "backup-v6", ""}, {ns2, "y", "backup-v6", ""}} {
		x.addr = f.waitFIPIn(x.ns, x.name, 30*time.Second, "allocated", suite.Allocated).Status.IPAddress
		want = append(want, x)
	}

	set := installChartResourceSet(t, f.ns)
	dir := t.TempDir()
	files, err := backup.BackupResourceSet(ctx, f.shard.Env.Config, set, dir)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{
		"customresourcedefinitions.apiextensions.k8s.io#v1/floatingipranges.kubefip.k8s.binbash.org.json",
		"customresourcedefinitions.apiextensions.k8s.io#v1/floatingips.kubefip.k8s.binbash.org.json",
		"floatingipranges.kubefip.k8s.binbash.org#v1/backup-v4.json",
		"floatingipranges.kubefip.k8s.binbash.org#v1/backup-v6.json",
	}
	for _, x := range want {
		wantFiles = append(wantFiles, filepath.Join("floatingips.kubefip.k8s.binbash.org#v1", x.ns, x.name+".json"))
	}
	for _, file := range wantFiles {
		if !slices.Contains(files, filepath.FromSlash(file)) {
			t.Errorf("the backup has no %s", file)
		}
	}
	if t.Failed() {
		t.Fatalf("backup files: %v", files)
	}

	// The disaster: no operator, and every object gone without its finalizers running.
	if err := p.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	oldUIDs := map[string]bool{}
	for _, x := range want {
		oldUIDs[string(f.waitFIPIn(x.ns, x.name, time.Second, "present", suite.Allocated).UID)] = true
		removeWithoutFinalizers(t, f, x.ns, x.name)
	}
	for _, name := range []string{"backup-v4", "backup-v6"} {
		removeWithoutFinalizers(t, f, "", name)
		// Lost with the rest: an allocation is not backed up, it is made again from the
		// restored FloatingIPs.
		list, err := f.api.FloatingIPAllocation().List(metav1.ListOptions{LabelSelector: v1.LabelRange + "=" + v1.RangeLabelValue(name)})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range list.Items {
			if err := f.api.FloatingIPAllocation().Delete(a.Name, nil); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The chart installed again: the operator's Deployment (which the ResourceSet names, and
	// which this API server without controllers only records), the webhook, and the operator
	// serving it.
	w := f.newWebhookEnv(nil)
	deployment := operatorDeploymentStandIn(t, f.ns, set)
	p = w.start(true)
	restorer, err := backup.ServiceAccountConfig(ctx, f.shard.Env.Config)
	if err != nil {
		t.Fatal(err)
	}

	mine := map[string]bool{"backup-v4": true, "backup-v6": true, f.ns: true, ns2: true}
	err = backup.RestoreBackup(ctx, restorer, dir, backup.RestoreOptions{
		Keep: func(o backup.BackupObject) bool {
			switch o.GVR.Resource {
			case "customresourcedefinitions":
				return true
			case "floatingipranges":
				return mine[o.Name]
			case "floatingips":
				return mine[o.Namespace]
			}
			return false
		},
		// What the Deployment controller and the kubelet do once the restore scaled it to 0.
		ScaledDown: func(context.Context) error {
			if got := deploymentReplicas(t, f.ns, deployment); got != 0 {
				return fmt.Errorf("the restore left %s at %d replicas; want 0 while it writes", deployment, got)
			}
			if err := p.Stop(20 * time.Second); err != nil {
				return err
			}
			// Nothing answers the webhook now: a range write that is not exempt is refused.
			if err := w.judged(); err == nil {
				return fmt.Errorf("the webhook still judges range writes with the operator stopped")
			}
			return nil
		},
	})
	if err != nil {
		t.Fatalf("the restore, as %s:%s with the operator scaled down and the webhook in place: %v",
			backup.ServiceAccountNamespace, backup.ServiceAccountName, err)
	}
	if got := deploymentReplicas(t, f.ns, deployment); got != 1 {
		t.Errorf("after the restore %s has %d replicas; want 1 again", deployment, got)
	}
	// Restored as backed up, status included, before any operator runs; no allocation exists.
	for _, x := range want {
		got := f.waitFIPIn(x.ns, x.name, time.Second, "restored", func(*v1.FloatingIP) bool { return true })
		if oldUIDs[string(got.UID)] || got.Spec.IPAddress != x.addr || got.Status.IPAddress != x.addr {
			t.Errorf("restored %s: uid %s, spec %q, status %q; want a new object with %s", x.key(), got.UID, got.Spec.IPAddress, got.Status.IPAddress, x.addr)
		}
		if a, ok := f.held(x.rangeName)[x.addr]; ok {
			t.Errorf("%s in range %s is held before any operator runs: %+v", x.addr, x.rangeName, a)
		}
	}

	p = w.start(true)
	for _, x := range want {
		got := f.waitFIPIn(x.ns, x.name, 30*time.Second, "allocated", suite.Allocated)
		if got.Status.IPAddress != x.addr || got.Spec.IPAddress != x.addr {
			t.Errorf("%s holds %s (spec %s) after the restore, want %s", x.key(), got.Status.IPAddress, got.Spec.IPAddress, x.addr)
		}
		if err := p.WaitForLog(ctx, fmt.Sprintf("repair: recorded %s/%s %s", x.rangeName, x.addr, x.key()), 30*time.Second); err != nil {
			t.Error(err)
		}
		uid := got.UID
		rig.Eventually(t, 30*time.Second, fmt.Sprintf("%s recorded for the restored %s", x.addr, x.key()), func() bool {
			a, ok := f.held(x.rangeName)[x.addr]
			return ok && a.UID == uid && a.Namespace == x.ns && a.Name == x.name
		})
	}
	for _, name := range []string{"backup-v4", "backup-v6"} {
		for addr, a := range f.held(name) {
			if oldUIDs[string(a.UID)] {
				t.Errorf("range %s still records %s for the lost object %s/%s", name, addr, a.Namespace, a.Name)
			}
		}
	}

	// The allocator knows every restored address: the next FloatingIP gets the free one between.
	f.createFIP("z", "backup-v4", "")
	if got := f.waitFIP("z", 30*time.Second, "allocated", suite.Allocated).Status.IPAddress; got != freed {
		t.Errorf("a new FloatingIP got %s, want the free %s", got, freed)
	}
	f.checkRecord("backup-v4", 5)
	g := &fixture{t: t, ns: ns2, api: f.api}
	g.checkRecord("backup-v6", 2)
}

// installChartResourceSet renders the operator chart with the ResourceSet on, creates it in the
// API server under rancher-backup's ResourceSet CRD with strict field validation, and returns it
// as a Backup reads it there.
func installChartResourceSet(t *testing.T, ns string) backup.ResourceSet {
	t.Helper()
	ctx := context.Background()
	objs := chartrepo.RenderOperatorChart(t, ns, map[string]interface{}{"backup": map[string]interface{}{"resourceSet": map[string]interface{}{"enabled": true}}},
		backup.ResourceSetAPIVersion)
	var rendered *unstructured.Unstructured
	for _, o := range objs {
		if o.GroupVersionKind() == backup.ResourceSetGVK {
			rendered = o
		}
	}
	if rendered == nil {
		t.Fatal("the chart renders no ResourceSet with backup.resourceSet.enabled=true")
	}
	cfg := shards.Of(t).Env.Config
	if err := backup.InstallResourceSetCRD(cfg); err != nil {
		t.Fatal(err)
	}
	client := dynamic.NewForConfigOrDie(cfg).Resource(backup.ResourceSetGVK.GroupVersion().WithResource("resourcesets"))
	_ = client.Delete(ctx, rendered.GetName(), metav1.DeleteOptions{})
	created, err := client.Create(ctx, rendered, metav1.CreateOptions{FieldValidation: "Strict"})
	if err != nil {
		t.Fatalf("rancher-backup's ResourceSet CRD refuses the chart's ResourceSet: %v", err)
	}
	t.Cleanup(func() { _ = client.Delete(context.Background(), created.GetName(), metav1.DeleteOptions{}) })
	var set backup.ResourceSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(created.Object, &set); err != nil {
		t.Fatal(err)
	}
	return set
}

// removeWithoutFinalizers deletes a FloatingIP (ns set) or a range as a disaster would: its
// finalizers stripped, no operator running, and waits until it is gone.
func removeWithoutFinalizers(t *testing.T, f *fixture, ns, name string) {
	t.Helper()
	gone := func() bool {
		var err error
		if ns == "" {
			_, err = f.api.FloatingIPRange().Get(name, metav1.GetOptions{})
		} else {
			_, err = f.api.FloatingIP().Get(ns, name, metav1.GetOptions{})
		}
		return apierrors.IsNotFound(err)
	}
	err := rig.Until(10*time.Second, fmt.Sprintf("%s/%s removed", ns, name), nil, func() (bool, error) {
		if gone() {
			return true, nil
		}
		var err error
		if ns == "" {
			var r *v1.FloatingIPRange
			if r, err = f.api.FloatingIPRange().Get(name, metav1.GetOptions{}); err == nil {
				r.Finalizers = nil
				if _, err = f.api.FloatingIPRange().Update(r); err == nil {
					err = f.api.FloatingIPRange().Delete(name, nil)
				}
			}
		} else {
			var x *v1.FloatingIP
			if x, err = f.api.FloatingIP().Get(ns, name, metav1.GetOptions{}); err == nil {
				x.Finalizers = nil
				if _, err = f.api.FloatingIP().Update(x); err == nil {
					err = f.api.FloatingIP().Delete(ns, name, nil)
				}
			}
		}
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			t.Fatalf("removing %s/%s: %v", ns, name, err)
		}
		return false, err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// operatorDeploymentStandIn creates the Deployment the ResourceSet's controllerReference names,
// with one replica, and returns its name. The API server has no controllers: the Deployment is
// the record a restore scales, not a workload; the test stops and starts the operator process.
func operatorDeploymentStandIn(t *testing.T, ns string, set backup.ResourceSet) string {
	t.Helper()
	if len(set.ControllerReferences) != 1 {
		t.Fatalf("the chart's ResourceSet names %d controllerReferences; want the operator's Deployment", len(set.ControllerReferences))
	}
	ref := set.ControllerReferences[0]
	if ref.APIVersion != "apps/v1" || ref.Resource != "deployments" || ref.Namespace != ns {
		t.Fatalf("the chart's ResourceSet names %+v; want the operator's Deployment in %s", ref, ns)
	}
	labels := map[string]string{"app.kubernetes.io/name": "kube-fip-operator"}
	one := int32(1)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "operator", Image: "kubefip/kube-fip-operator"}}},
			},
		},
	}
	deployments := shards.Of(t).Kube.AppsV1().Deployments(ns)
	if _, err := deployments.Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = deployments.Delete(context.Background(), ref.Name, metav1.DeleteOptions{}) })
	return ref.Name
}

func deploymentReplicas(t *testing.T, ns, name string) int32 {
	t.Helper()
	d, err := shards.Of(t).Kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *d.Spec.Replicas
}
