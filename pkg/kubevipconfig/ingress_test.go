package kubevipconfig

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// controllerPod is a pod of controller c in the ingress namespace.
func controllerPod(c IngressController, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: IngressNamespace, Labels: c.Selector}}
}

// TestFindIngressController: a guest running the pods of one known controller gets that one; none,
// both, or pods that only look alike (another namespace, a label missing) get none and why.
func TestFindIngressController(t *testing.T) {
	t.Parallel()
	nginx, traefik := IngressControllers()[0], IngressControllers()[1]
	partial := controllerPod(nginx, "partial")
	partial.Labels = map[string]string{"app.kubernetes.io/name": "rke2-ingress-nginx"}
	elsewhere := controllerPod(traefik, "elsewhere")
	elsewhere.Namespace = "default"
	for _, c := range []struct {
		name string
		objs []runtime.Object
		want string
		why  string
	}{
		{"none", nil, "", "no pod of rke2-ingress-nginx or rke2-traefik runs in kube-system"},
		{"nginx", []runtime.Object{controllerPod(nginx, "n")}, "rke2-ingress-nginx", ""},
		{"traefik", []runtime.Object{controllerPod(traefik, "t")}, "rke2-traefik", ""},
		{"both", []runtime.Object{controllerPod(nginx, "n"), controllerPod(traefik, "t")}, "", "does not choose"},
		{"look-alikes", []runtime.Object{partial, elsewhere}, "", "no pod of"},
	} {
		got, why, err := FindIngressController(context.Background(), fake.NewSimpleClientset(c.objs...).CoreV1())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		name := ""
		if got != nil {
			name = got.Name
		}
		if name != c.want || !strings.Contains(why, c.why) || (c.why == "") != (why == "") {
			t.Errorf("%s: found %q, %q; want %q, %q", c.name, name, why, c.want, c.why)
		}
	}
}

// TestIngressServiceRoundTrip: the Service is created as kube-vip-cloud-provider takes it, left
// alone while it is as wanted, put back after an edit (keeping the node ports the API server gave
// it), follows a new address and a second family, and is removed again; one of that name the
// operator did not write is neither written over nor removed.
func TestIngressServiceRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	traefik := IngressControllers()[1]
	kube := fake.NewSimpleClientset()
	v4, v4b, v6 := netip.MustParseAddr("192.0.2.7"), netip.MustParseAddr("192.0.2.8"), netip.MustParseAddr("2001:db8::7")
	get := func() *corev1.Service {
		t.Helper()
		svc, err := kube.CoreV1().Services(IngressNamespace).Get(ctx, IngressServiceName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	ensure := func(want IngressResult, addrs ...netip.Addr) {
		t.Helper()
		if res, err := EnsureIngressService(ctx, kube.CoreV1(), traefik, addrs); err != nil || res != want {
			t.Fatalf("ensure %v = %v, %v; want %v", addrs, res, err, want)
		}
	}
	ensure(IngressCreated, v4)
	ensure(IngressUnchanged, v4)
	svc := get()
	st, ok := ServiceAddresses(svc)
	if !ok || !slices.Equal(st.Asks, []netip.Addr{v4}) || svc.Spec.Selector["app.kubernetes.io/name"] != "rke2-traefik" ||
		svc.Spec.Ports[0].TargetPort.StrVal != "web" || svc.Spec.Ports[1].TargetPort.StrVal != "websecure" ||
		svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster || svc.Labels["implementation"] != "kube-vip" {
		t.Fatalf("the Service as created: %+v (asks %v)", svc, st.Asks)
	}

	// Someone edits it; the node ports the API server gave it stay.
	svc.Spec.Selector = map[string]string{"app": "other"}
	svc.Spec.Ports[0].NodePort, svc.Spec.Ports[1].NodePort = 30080, 30443
	_, err := kube.CoreV1().Services(IngressNamespace).Update(ctx, svc, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ensure(IngressUpdated, v4)
	if svc = get(); svc.Spec.Selector["app.kubernetes.io/name"] != "rke2-traefik" || svc.Spec.Selector["app"] != "" || svc.Spec.Ports[0].NodePort != 30080 {
		t.Errorf("after the edit was put back: selector %v, node port %d", svc.Spec.Selector, svc.Spec.Ports[0].NodePort)
	}
	ensure(IngressUpdated, v4b)
	ensure(IngressUpdated, v4b, v6)
	if svc = get(); svc.Annotations[LoadBalancerIPsAnnotation] != "192.0.2.8,2001:db8::7" || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyPreferDualStack ||
		!slices.Equal(svc.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}) {
		t.Errorf("dual-stack: %v, %v, %v", svc.Annotations, *svc.Spec.IPFamilyPolicy, svc.Spec.IPFamilies)
	}
	for _, bad := range [][]netip.Addr{nil, {v4, v4b}, {v4, v4b, v6}} {
		if _, err := EnsureIngressService(ctx, kube.CoreV1(), traefik, bad); err == nil {
			t.Errorf("a Service for %v was not refused", bad)
		}
	}
	if removed, err := RemoveIngressService(ctx, kube.CoreV1()); err != nil || !removed {
		t.Fatalf("remove = %v, %v", removed, err)
	}
	if removed, err := RemoveIngressService(ctx, kube.CoreV1()); err != nil || removed {
		t.Errorf("remove of nothing = %v, %v", removed, err)
	}

	theirs := fake.NewSimpleClientset(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: IngressServiceName, Namespace: IngressNamespace},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}})
	if _, err := EnsureIngressService(ctx, theirs.CoreV1(), traefik, []netip.Addr{v4}); err == nil || !strings.Contains(err.Error(), "not the operator's") {
		t.Errorf("someone else's Service: %v; want refused", err)
	}
	if removed, err := RemoveIngressService(ctx, theirs.CoreV1()); err != nil || removed {
		t.Errorf("remove of someone else's Service = %v, %v", removed, err)
	}
	if svc, _ := theirs.CoreV1().Services(IngressNamespace).Get(ctx, IngressServiceName, metav1.GetOptions{}); svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Error("someone else's Service was changed")
	}
}
