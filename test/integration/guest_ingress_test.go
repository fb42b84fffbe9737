package integration

import (
	"context"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
)

// ingressReason is a FloatingIP's IngressServed reason, "" when it has none.
func ingressReason(x *v1.FloatingIP) string { return reasonOf(x, v1.IngressServed) }

// TestGuestIngressFollowsTheOptIn: in a guest whose kube-system runs rke2-traefik's pods (labelled
// as its chart labels them), a FloatingIP of a range with spec.ingress gets the operator's Service
// kube-system/kube-fip-ingress: LoadBalancer, for kube-vip, asking for the address, selecting
// Traefik's pods on its web and websecure ports. IngressServed waits until the Service's status
// holds the address (written here as kube-vip writes it; the end-to-end suite has the real one).
// An edit of the Service is put back. The cluster labelled kubefip.k8s.binbash.org/ingress=false
// loses the Service and the condition; with the label gone and a Service of that name that is not
// the operator's, that one is left alone and the FloatingIP says so.
func TestGuestIngressFollowsTheOptIn(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "kube-fip-ingress")
	proxy := f.shard.StartClusterProxy(t)
	g := f.shard.StartGuest(t, "ingress")
	gc := rancherCluster(t, proxy, "ingress", "c-m-ingress1", nil, g)
	f.extraNamespace(gc.id)
	traefik := kubevipconfig.IngressControllers()[1]
	_, err := gc.direct.CoreV1().Pods("kube-system").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "rke2-traefik-x1", Labels: maps.Clone(traefik.Selector)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "rke2-traefik", Image: "traefik"}}},
	}, metav1.CreateOptions{})
	rig.Must(t, err)
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "1"})
	f.operator()
	const addr, fip = "10.198.0.2", "ingress-kubevip"
	f.createRange("ingress", "10.198.0.0/28")
	f.editRange("ingress", func(r *v1.FloatingIPRange) { r.Spec.Ingress = true })
	f.createFIPIn(gc.id, fip, "ingress", addr)

	services := gc.direct.CoreV1().Services("kube-system")
	var svc *corev1.Service
	rig.Eventually(t, 60*time.Second, "the ingress Service", func() bool {
		svc, err = services.Get(ctx, kubevipconfig.IngressServiceName, metav1.GetOptions{})
		return err == nil
	})
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Annotations[kubevipconfig.LoadBalancerIPsAnnotation] != addr ||
		svc.Labels["implementation"] != "kube-vip" || !maps.Equal(svc.Spec.Selector, traefik.Selector) ||
		len(svc.Spec.Ports) != 2 || svc.Spec.Ports[0].TargetPort.StrVal != "web" || svc.Spec.Ports[1].TargetPort.StrVal != "websecure" {
		t.Fatalf("the ingress Service: %+v", svc)
	}
	f.waitFIPIn(gc.id, fip, 30*time.Second, "IngressPending", func(x *v1.FloatingIP) bool { return ingressReason(x) == v1.ReasonIngressPending })

	// kube-vip binds the address: the Service's status holds it.
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: addr}}
	_, err = services.UpdateStatus(ctx, svc, metav1.UpdateOptions{})
	rig.Must(t, err)
	x := f.waitFIPIn(gc.id, fip, 30*time.Second, "IngressServed", func(x *v1.FloatingIP) bool { return ingressReason(x) == v1.ReasonIngressServed })
	if !v1.IngressServed.IsTrue(x) || x.Status.ServedBy != "kube-system/"+kubevipconfig.IngressServiceName {
		t.Errorf("IngressServed %v, servedBy %q; want True, served by the ingress Service", v1.IngressServed.IsTrue(x), x.Status.ServedBy)
	}

	// An edit is put back.
	svc, err = services.Get(ctx, kubevipconfig.IngressServiceName, metav1.GetOptions{})
	rig.Must(t, err)
	svc.Spec.Selector = map[string]string{"app": "else"}
	_, err = services.Update(ctx, svc, metav1.UpdateOptions{})
	rig.Must(t, err)
	rig.Eventually(t, 30*time.Second, "the selector put back", func() bool {
		svc, err = services.Get(ctx, kubevipconfig.IngressServiceName, metav1.GetOptions{})
		return err == nil && maps.Equal(svc.Spec.Selector, traefik.Selector)
	})

	// The cluster opts out.
	rig.Must(t, gc.world.LabelGuest(gc.name, gc.id, v1.LabelIngress, "false"))
	rig.Eventually(t, 30*time.Second, "the ingress Service removed", func() bool {
		_, err := services.Get(ctx, kubevipconfig.IngressServiceName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	f.waitFIPIn(gc.id, fip, 30*time.Second, "no IngressServed", func(x *v1.FloatingIP) bool { return ingressReason(x) == "" })

	// Someone else's Service of that name: left alone, and said so.
	_, err = services.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: kubevipconfig.IngressServiceName},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8080}}}}, metav1.CreateOptions{})
	rig.Must(t, err)
	rig.Must(t, gc.world.LabelGuest(gc.name, gc.id, v1.LabelIngress, "true"))
	f.waitFIPIn(gc.id, fip, 30*time.Second, "IngressFailed", func(x *v1.FloatingIP) bool { return ingressReason(x) == v1.ReasonIngressFailed })
	if svc, err := services.Get(ctx, kubevipconfig.IngressServiceName, metav1.GetOptions{}); err != nil || svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("someone else's Service: %+v, %v; want it as it was", svc, err)
	}
}
