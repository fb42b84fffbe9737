package cleanup

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

const (
	fipFinalizer   = "wrangler.cattle.io/kube-fip-floatingip"
	rangeFinalizer = "wrangler.cattle.io/kube-fip-floatingiprange"
	otherFinalizer = "example.com/keep-me"
)

func object(kind, ns, name, addr string, finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(v1.SchemeGroupVersion.String())
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	u.SetFinalizers(finalizers)
	if addr != "" {
		_ = unstructured.SetNestedField(u.Object, addr, "status", "ipaddress")
	}
	return u
}

func fipGVR() schema.GroupVersionResource { return v1.SchemeGroupVersion.WithResource("floatingips") }
func allocGVR() schema.GroupVersionResource {
	return v1.SchemeGroupVersion.WithResource("floatingipallocations")
}
func rangeGVR() schema.GroupVersionResource {
	return v1.SchemeGroupVersion.WithResource("floatingipranges")
}

func newDynamic(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		fipGVR():   "FloatingIPList",
		allocGVR(): "FloatingIPAllocationList",
		rangeGVR(): "FloatingIPRangeList",
	}, objs...)
}

// world is two FloatingIPs in c-m-* namespaces, one also carrying another controller's finalizer,
// and their range.
func world() []runtime.Object {
	return []runtime.Object{
		object("FloatingIP", "c-m-aaaa1111", "a-kubevip", "10.0.0.2", fipFinalizer),
		object("FloatingIP", "c-m-bbbb2222", "b-kubevip", "10.0.0.3", otherFinalizer, fipFinalizer),
		object("FloatingIPAllocation", "", "10.0.0.2", ""),
		object("FloatingIPAllocation", "", "10.0.0.3", ""),
		object("FloatingIPRange", "", "vlan10", "", rangeFinalizer),
	}
}

// allocations names the FloatingIPAllocations left.
func allocations(t *testing.T, dyn *dynamicfake.FakeDynamicClient) []string {
	t.Helper()
	list, err := dyn.Resource(allocGVR()).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range list.Items {
		out = append(out, o.GetName())
	}
	return out
}

func finalizersOf(t *testing.T, dyn *dynamicfake.FakeDynamicClient) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, gvr := range []schema.GroupVersionResource{fipGVR(), rangeGVR()} {
		list, err := dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			out[o.GetName()] = o.GetFinalizers()
		}
	}
	return out
}

// TestKeepRemovesOnlyTheOperatorsFinalizers: keep takes the operator's finalizer off every
// FloatingIP and range, leaves another controller's, and keeps every object with its address.
func TestKeepRemovesOnlyTheOperatorsFinalizers(t *testing.T) {
	dyn := newDynamic(world()...)
	res, err := Run(context.Background(), kubefake.NewSimpleClientset(), dyn, Options{Mode: ModeKeep})
	if err != nil {
		t.Fatal(err)
	}
	if res.Released != 3 || res.Deleted != 0 || len(res.Blocked) != 0 {
		t.Errorf("result %+v; want 3 released, nothing deleted or blocked", res)
	}
	want := map[string][]string{"a-kubevip": {}, "b-kubevip": {otherFinalizer}, "vlan10": {}}
	got := finalizersOf(t, dyn)
	for name, w := range want {
		if g, ok := got[name]; !ok || len(g) != len(w) || (len(w) > 0 && !reflect.DeepEqual(g, w)) {
			t.Errorf("%s: finalizers %v (present %v); want %v", name, g, ok, w)
		}
	}
	fip, err := dyn.Resource(fipGVR()).Namespace("c-m-aaaa1111").Get(context.Background(), "a-kubevip", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if addr, _, _ := unstructured.NestedString(fip.Object, "status", "ipaddress"); addr != "10.0.0.2" {
		t.Errorf("kept FloatingIP's address %q; want 10.0.0.2", addr)
	}
	if left := allocations(t, dyn); !reflect.DeepEqual(left, []string{"10.0.0.2", "10.0.0.3"}) {
		t.Errorf("allocations after keep: %v; want both kept for the reinstall", left)
	}
}

// TestDeleteDeletesFloatingIPsBeforeRanges: delete deletes every object, FloatingIPs and their
// allocations before the range, and names the one another controller's finalizer keeps.
func TestDeleteDeletesFloatingIPsBeforeRanges(t *testing.T) {
	dyn := newDynamic(world()...)
	res, err := Run(context.Background(), kubefake.NewSimpleClientset(), dyn, Options{Mode: ModeDelete})
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 5 {
		t.Errorf("deleted %d; want 5", res.Deleted)
	}
	if left := allocations(t, dyn); len(left) != 0 {
		t.Errorf("allocations left after delete: %v", left)
	}
	if got := finalizersOf(t, dyn); len(got) != 0 {
		t.Errorf("left after delete: %v", got)
	}
	var order []string
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "delete" {
			order = append(order, a.GetResource().Resource)
		}
	}
	if strings.Join(order, ",") != "floatingips,floatingips,floatingipallocations,floatingipallocations,floatingipranges" {
		t.Errorf("deletes in order %v; want the FloatingIPs, their allocations, then the range", order)
	}
}

// TestDeleteReportsForeignFinalizers: an object that another controller's finalizer keeps after
// the delete is reported, not forced.
func TestDeleteReportsForeignFinalizers(t *testing.T) {
	dyn := newDynamic(world()...)
	// The fake client deletes at once; a real API server keeps an object with finalizers,
	// terminating, which is what this reactor does for b-kubevip.
	dyn.PrependReactor("delete", "floatingips", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return a.(k8stesting.DeleteAction).GetName() == "b-kubevip", nil, nil
	})
	res, err := Run(context.Background(), kubefake.NewSimpleClientset(), dyn, Options{Mode: ModeDelete})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Blocked, []string{"FloatingIP c-m-bbbb2222/b-kubevip (10.0.0.3)"}) {
		t.Errorf("blocked %v; want b-kubevip named with its address", res.Blocked)
	}
	if got := finalizersOf(t, dyn)["b-kubevip"]; !reflect.DeepEqual(got, []string{otherFinalizer}) {
		t.Errorf("b-kubevip finalizers %v; want only the other controller's", got)
	}
}

func operatorDeployment(replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-fip-operator", Namespace: "kube-fip"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "kube-fip-operator"}},
		},
	}
}

func operatorPod(name string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-fip", Labels: map[string]string{"app.kubernetes.io/name": "kube-fip-operator"}},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

// scaleReactors make the fake clientset serve the Deployment's scale subresource from the
// Deployment itself, as the API server does, and record the replicas written.
func scaleReactors(kube *kubefake.Clientset, written *[]int32) {
	kube.PrependReactor("get", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		d, err := kube.Tracker().Get(a.GetResource(), a.GetNamespace(), a.(k8stesting.GetAction).GetName())
		if err != nil {
			return true, nil, err
		}
		dep := d.(*appsv1.Deployment)
		return true, &autoscalingv1.Scale{ObjectMeta: dep.ObjectMeta, Spec: autoscalingv1.ScaleSpec{Replicas: *dep.Spec.Replicas}}, nil
	})
	kube.PrependReactor("update", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		scale := a.(k8stesting.UpdateAction).GetObject().(*autoscalingv1.Scale)
		*written = append(*written, scale.Spec.Replicas)
		d, err := kube.Tracker().Get(a.GetResource(), a.GetNamespace(), scale.Name)
		if err != nil {
			return true, nil, err
		}
		dep := d.(*appsv1.Deployment).DeepCopy()
		dep.Spec.Replicas = &scale.Spec.Replicas
		return true, scale, kube.Tracker().Update(a.GetResource(), dep, a.GetNamespace())
	})
}

// TestStopsTheOperatorFirst: the Deployment is scaled to zero and no finalizer is touched until
// its last running pod is gone (a finished pod does not count).
func TestStopsTheOperatorFirst(t *testing.T) {
	kube := kubefake.NewSimpleClientset(operatorDeployment(2), operatorPod("op-1", corev1.PodRunning),
		operatorPod("op-2", corev1.PodRunning), operatorPod("op-old", corev1.PodSucceeded))
	var written []int32
	scaleReactors(kube, &written)
	dyn := newDynamic(world()...)

	// The pods go one by one after the scale-down; every list sees whether a finalizer was
	// already touched while one still ran.
	touchedEarly := false
	lists := 0
	kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		for _, act := range dyn.Actions() {
			if act.GetVerb() == "update" {
				touchedEarly = true
			}
		}
		lists++
		switch lists {
		case 2:
			_ = kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "kube-fip", "op-1")
		case 3:
			_ = kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "kube-fip", "op-2")
		}
		return false, nil, nil
	})
	res, err := Run(context.Background(), kube, dyn, Options{Mode: ModeKeep, Namespace: "kube-fip", Deployment: "kube-fip-operator",
		PollInterval: time.Millisecond, StopTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(written, []int32{0}) {
		t.Errorf("scale writes %v; want one, to 0", written)
	}
	if lists < 3 || touchedEarly {
		t.Errorf("pods listed %d times, finalizer touched while the operator ran: %v; want the wait first", lists, touchedEarly)
	}
	if res.Released != 3 {
		t.Errorf("released %d; want 3", res.Released)
	}
}

// TestOperatorThatDoesNotStopChangesNothing: pods that stay past the timeout fail the clean-up
// with the count, and no object is touched.
func TestOperatorThatDoesNotStopChangesNothing(t *testing.T) {
	kube := kubefake.NewSimpleClientset(operatorDeployment(1), operatorPod("op-1", corev1.PodRunning))
	var written []int32
	scaleReactors(kube, &written)
	dyn := newDynamic(world()...)
	_, err := Run(context.Background(), kube, dyn, Options{Mode: ModeDelete, Namespace: "kube-fip", Deployment: "kube-fip-operator",
		PollInterval: time.Millisecond, StopTimeout: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "1 pods of Deployment kube-fip/kube-fip-operator still there") {
		t.Fatalf("err %v; want the pods that did not stop named", err)
	}
	for _, a := range dyn.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "get" {
			t.Errorf("object changed although the operator still ran: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// TestMissingDeploymentIsNotWaitedFor: with the operator's Deployment gone already the clean-up
// goes straight to the objects.
func TestMissingDeploymentIsNotWaitedFor(t *testing.T) {
	dyn := newDynamic(world()...)
	res, err := Run(context.Background(), kubefake.NewSimpleClientset(), dyn, Options{Mode: ModeKeep, Namespace: "kube-fip", Deployment: "kube-fip-operator"})
	if err != nil || res.Released != 3 {
		t.Errorf("released %d, %v; want 3 and no error", res.Released, err)
	}
}

// TestParseMode accepts exactly keep and delete; Run refuses anything else before touching the
// cluster.
func TestParseMode(t *testing.T) {
	for _, s := range []string{"keep", "delete"} {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	for _, s := range []string{"", "release", "Delete", "purge"} {
		if _, err := ParseMode(s); err == nil {
			t.Errorf("ParseMode(%q) accepted", s)
		}
	}
	dyn := newDynamic(world()...)
	if _, err := Run(context.Background(), kubefake.NewSimpleClientset(), dyn, Options{Mode: "purge"}); err == nil {
		t.Error("Run with mode purge: no error")
	}
	if len(dyn.Actions()) != 0 {
		t.Errorf("Run with a bad mode made requests: %v", dyn.Actions())
	}
}

// TestConflictIsRetried: a finalizer write that conflicts with another writer is retried on the
// object as read again.
func TestConflictIsRetried(t *testing.T) {
	dyn := newDynamic(world()...)
	conflicts := 0
	dyn.PrependReactor("update", "floatingipranges", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			conflicts++
			return true, nil, apierrors.NewConflict(v1.Resource("floatingipranges"), "vlan10", errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	res, err := Run(context.Background(), kubefake.NewSimpleClientset(), dyn, Options{Mode: ModeKeep})
	if err != nil || res.Released != 3 || conflicts != 1 {
		t.Errorf("released %d, conflicts %d, %v; want 3 after one conflict", res.Released, conflicts, err)
	}
	var gets []string
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "get" {
			gets = append(gets, a.GetResource().Resource)
		}
	}
	sort.Strings(gets)
	if !reflect.DeepEqual(gets, []string{"floatingipranges"}) {
		t.Errorf("gets %v; want the range read again once", gets)
	}
}
