package e2e

import (
	"context"
	"maps"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/node"
)

// TestIngressControllerOnTheAddress: once the suite's range asks for it (spec.ingress), the pods
// of the guest's ingress controller answer on the FloatingIP's address, port 80, to a client over
// the link, through the operator's Service and the real kube-vip; the FloatingIP says
// IngressServed, served by that Service. Once the range asks no more, the Service goes and the
// address is Idle again. The echo backend stands in for the controller: it runs in kube-system as
// RKE2's rke2-traefik chart labels its pods and names its ports (web, websecure); the real
// controller cannot be built within the suite's budget.
func TestIngressControllerOnTheAddress(t *testing.T) {
	s := current(t)
	ctx := context.Background()
	fip := s.guestFIP(t)
	s.deleteService(t, "default", "echo") // the address is the ingress Service's alone
	traefik := kubevipconfig.IngressControllers()[1]
	labels := maps.Clone(traefik.Selector)
	one := int32(1)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: kubevipconfig.IngressNamespace},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Tolerations: []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				Containers: []corev1.Container{{Name: "echo", Image: node.EchoImage, ImagePullPolicy: corev1.PullIfNotPresent,
					Ports: []corev1.ContainerPort{{Name: traefik.HTTP, ContainerPort: 8080}, {Name: traefik.HTTPS, ContainerPort: 8443}}}}}}}}
	_, err := s.guestKube.AppsV1().Deployments(dep.Namespace).Create(ctx, dep, metav1.CreateOptions{})
	rig.Must(t, err)
	setIngress := func(on bool) {
		t.Helper()
		rig.Must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			r, err := s.fips.FloatingIPRange().Get(suiteRange, metav1.GetOptions{})
			if err != nil {
				return err
			}
			r.Spec.Ingress = on
			_, err = s.fips.FloatingIPRange().Update(r)
			return err
		}))
	}
	t.Cleanup(func() {
		setIngress(false)
		_ = s.guestKube.AppsV1().Deployments(dep.Namespace).Delete(ctx, dep.Name, metav1.DeleteOptions{})
	})

	setIngress(true)
	var x *v1.FloatingIP
	rig.Eventually(t, 2*time.Minute, "IngressServed", func() bool {
		list, err := s.fips.FloatingIP().List(guestID, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false
		}
		x = &list.Items[0]
		return v1.IngressServed.IsTrue(x)
	})
	if want := kubevipconfig.IngressNamespace + "/" + kubevipconfig.IngressServiceName; x.Status.ServedBy != want {
		t.Errorf("servedBy %q; want %s", x.Status.ServedBy, want)
	}
	s.servedThrough(t, fip, "the ingress controller's pods")

	setIngress(false)
	rig.Eventually(t, time.Minute, "the ingress Service gone", func() bool {
		_, err := s.guestKube.CoreV1().Services(kubevipconfig.IngressNamespace).Get(ctx, kubevipconfig.IngressServiceName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	x = s.waitServed(t, 2*time.Minute, v1.ReasonIdle)
	if c, shown := v1.GetCondition(x.Status.Conditions, v1.IngressServed); shown {
		t.Errorf("IngressServed still shown once the range asks no more: %s %s", c.Reason, c.Message)
	}
}
