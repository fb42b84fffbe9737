package kubevipconfig

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// TestReadServingReadsWhatServes: the operator's DaemonSet and the Services kube-vip-cloud-provider
// labels are read, what each Service asks for (annotation and spec.loadBalancerIP) and holds; a
// Service of another type or without the provider's label is not; no more than MaxServices are
// read, and More says so.
func TestReadServingReadsWhatServes(t *testing.T) {
	t.Parallel()
	var objs []runtime.Object
	lb := func(name, asks, holds string, labelled bool) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{LoadBalancerIPsAnnotation: asks}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
		if labelled {
			s.Labels = map[string]string{"implementation": "kube-vip"}
		}
		if holds != "" {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: holds}}
		}
		return s
	}
	objs = append(objs, lb("a", "10.0.0.5,fd00::5", "10.0.0.5", true), lb("b", "10.0.0.6", "", true), lb("unlabelled", "10.0.0.7", "", false))
	objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "cluster-ip", Namespace: "default", Labels: map[string]string{"implementation": "kube-vip"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}})
	kube := fake.NewSimpleClientset(objs...)
	s, err := ReadServing(context.Background(), kube.CoreV1(), kube.AppsV1(), "kube-system", "kube-fip-kube-vip")
	if err != nil {
		t.Fatal(err)
	}
	if s.Kubevip == nil || s.Kubevip.Found {
		t.Errorf("Kubevip = %+v; want a DaemonSet looked for and not found", s.Kubevip)
	}
	if len(s.Services) != 2 || s.Services[0].String() != "default/a" || s.Services[1].String() != "default/b" || s.More {
		t.Fatalf("Services = %+v, More %t; want default/a and default/b", s.Services, s.More)
	}
	if a := s.Services[0]; len(a.Asks) != 2 || len(a.Holds) != 1 || a.Holds[0] != netip.MustParseAddr("10.0.0.5") {
		t.Errorf("default/a = %+v", a)
	}

	objs = nil
	for i := 0; i < MaxServices+10; i++ {
		objs = append(objs, lb(fmt.Sprintf("s%03d", i), "10.0.1.1", "", true))
	}
	kube = fake.NewSimpleClientset(objs...)
	s, err = ReadServing(context.Background(), kube.CoreV1(), kube.AppsV1(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Kubevip != nil || len(s.Services) > MaxServices || !s.More {
		t.Errorf("%d Services read, More %t, Kubevip %+v; want at most %d and More, no DaemonSet", len(s.Services), s.More, s.Kubevip, MaxServices)
	}
}
