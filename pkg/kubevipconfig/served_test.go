package kubevipconfig

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// lbService is a LoadBalancer Service in default asking for asks (the annotation) and holding
// holds (its status, when not ""), labelled for kube-vip-cloud-provider when labelled is set.
func lbService(name, asks, holds string, labelled bool) *corev1.Service {
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

var ours = []netip.Addr{netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("fd00::5"), netip.MustParseAddr("10.0.0.6")}

// readServing is one look at the Services of kube and what it says of ours, with the operator's
// DaemonSet judged from what kube holds in kube-system.
func readServing(t *testing.T, kube *fake.Clientset, ref *KubevipRef) (Serving, error) {
	t.Helper()
	list, err := ListServices(context.Background(), kube.CoreV1())
	if err != nil {
		return Serving{}, err
	}
	var ds *DaemonSetState
	if ref != nil {
		ds, _ = KubevipState(*ref, func(name string) (DaemonSetStatus, bool) {
			d, err := kube.AppsV1().DaemonSets(ref.Namespace).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return DaemonSetStatus{}, false
			}
			return DaemonSetStatusOf(d), true
		})
	}
	return ServingOf(ds, list.Services, list.Limited, ours), nil
}

// TestServingReadsWhatServes: the operator's DaemonSet and the Services kube-vip-cloud-provider
// labels are read, and of each Service only which of the guest's addresses it asks for
// (annotation and spec.loadBalancerIP) and holds; a Service that names none of them, one of
// another type and one without the provider's label are not kept.
func TestServingReadsWhatServes(t *testing.T) {
	t.Parallel()
	objs := []runtime.Object{
		lbService("a", "10.0.0.5,fd00::5,10.9.9.9", "10.0.0.5", true), lbService("b", "10.0.0.6", "", true),
		lbService("unlabelled", "10.0.0.7", "", false), lbService("other", "10.0.0.8", "10.0.0.8", true),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "cluster-ip", Namespace: "default", Labels: map[string]string{"implementation": "kube-vip"},
			Annotations: map[string]string{LoadBalancerIPsAnnotation: "10.0.0.5"}}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}},
	}
	kube := fake.NewSimpleClientset(objs...)
	s, err := readServing(t, kube, &KubevipRef{Namespace: "kube-system", Name: "kube-fip-kube-vip"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Kubevip == nil || s.Kubevip.Found {
		t.Errorf("Kubevip = %+v; want a DaemonSet looked for and not found", s.Kubevip)
	}
	if len(s.Services) != 2 || s.Services[0].String() != "default/a" || s.Services[1].String() != "default/b" || s.Limited != "" {
		t.Fatalf("Services = %+v, Limited %q; want default/a and default/b", s.Services, s.Limited)
	}
	if a := s.Services[0]; len(a.Asks) != 2 || len(a.Holds) != 1 || a.Holds[0] != netip.MustParseAddr("10.0.0.5") {
		t.Errorf("default/a = %+v; want it to ask for 10.0.0.5 and fd00::5 and hold 10.0.0.5, and nothing else kept", a)
	}
}

// TestServiceListIsBudgeted: every limit of one look ends it and says so: more than MaxServices
// Services, more than MaxServicePages pages (a guest answering empty pages without end), more than
// MaxServedBytes; and a Service naming more than MaxServiceAddresses addresses is named and its
// addresses not kept, while the others are read.
func TestServiceListIsBudgeted(t *testing.T) {
	t.Parallel()
	many := func(n int, asks string) []runtime.Object {
		var objs []runtime.Object
		for i := 0; i < n; i++ {
			objs = append(objs, lbService(fmt.Sprintf("s%03d", i), asks, "", true))
		}
		return objs
	}
	var tooMany []string
	for i := 0; i <= MaxServiceAddresses; i++ {
		tooMany = append(tooMany, fmt.Sprintf("10.1.0.%d", i))
	}
	big := strings.Repeat("x", 300<<10)
	for _, tc := range []struct {
		name  string
		objs  []runtime.Object
		pages func() *corev1.ServiceList
		want  string
		// wantRead are the Services kept, wantRequests the list requests (0: any).
		wantKept, wantRequests int
	}{
		{name: "more Services than a look reads", objs: many(MaxServices+10, "10.0.0.5"), want: "more than 200 kube-vip Services", wantKept: MaxServices},
		{name: "empty pages without end", pages: func() *corev1.ServiceList { return &corev1.ServiceList{ListMeta: metav1.ListMeta{Continue: "more"}} },
			want: "answered 20 pages", wantRequests: MaxServicePages},
		{name: "Services larger than a look reads", objs: func() []runtime.Object {
			objs := many(40, "10.0.0.5")
			for _, o := range objs {
				o.(*corev1.Service).Annotations["padding"] = big
			}
			return objs
		}(), want: "take more than 8 MiB", wantKept: (MaxServedBytes / (300 << 10))},
		{name: "a Service naming too many addresses", objs: append(many(3, "10.0.0.6"), lbService("greedy", strings.Join(append(tooMany, "10.0.0.5"), ","), "10.0.0.5", true)),
			want: "1 Services name more than 16 addresses each, and their addresses were not read: default/greedy", wantKept: 3},
		{name: "a Service holding too many addresses", objs: func() []runtime.Object {
			s := lbService("holder", "10.0.0.5", "", true)
			for _, a := range tooMany {
				s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: a})
			}
			return []runtime.Object{s}
		}(), want: "default/holder", wantKept: 0},
	} {
		kube := fake.NewSimpleClientset(tc.objs...)
		requests := 0
		kube.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
			requests++
			if tc.pages != nil {
				return true, tc.pages(), nil
			}
			return false, nil, nil
		})
		s, err := readServing(t, kube, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !strings.Contains(s.Limited, tc.want) || len(s.Services) != tc.wantKept {
			t.Errorf("%s: %d Services kept, Limited %q; want %d kept and a limit saying %q", tc.name, len(s.Services), s.Limited, tc.wantKept, tc.want)
		}
		if tc.wantRequests > 0 && requests != tc.wantRequests {
			t.Errorf("%s: %d list requests; want %d", tc.name, requests, tc.wantRequests)
		}
	}
}

// TestOriginalOperatorsKubevipStandsIn: while the operator's kube-vip DaemonSet is not in the
// guest, the original kube-fip-operator's of the same release (kube-system/kube-vip, as the
// kube-vip chart names it) is judged in its place; the Harvester cloud provider's of that name, or
// one of another release, is not; and once the operator's is there, it alone is judged.
func TestOriginalOperatorsKubevipStandsIn(t *testing.T) {
	t.Parallel()
	ds := func(name, release string, ready int32) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system",
			Annotations: map[string]string{"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": "kube-system"}},
			Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, NumberReady: ready}}
	}
	ref := &KubevipRef{Namespace: "kube-system", Name: "kube-fip-kube-vip", Release: "kube-vip"}
	for _, tc := range []struct {
		name      string
		objs      []runtime.Object
		wantFound bool
		wantName  string
		wantReady int32
	}{
		{"the original's", []runtime.Object{ds("kube-vip", "kube-vip", 1)}, true, "kube-vip", 1},
		{"Harvester's", []runtime.Object{ds("kube-vip", "harvester-cloud-provider", 1)}, false, "kube-fip-kube-vip", 0},
		{"another release's", []runtime.Object{ds("kube-vip", "kube-vip-other", 1)}, false, "kube-fip-kube-vip", 0},
		{"the operator's beside the original's", []runtime.Object{ds("kube-vip", "kube-vip", 1), ds("kube-fip-kube-vip", "kube-vip", 0)}, true, "kube-fip-kube-vip", 0},
	} {
		kube := fake.NewSimpleClientset(tc.objs...)
		s, err := readServing(t, kube, ref)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if k := s.Kubevip; k.Found != tc.wantFound || k.Name != tc.wantName || k.Ready != tc.wantReady {
			t.Errorf("%s: judged %+v; want found %v, %s with %d ready", tc.name, k, tc.wantFound, tc.wantName, tc.wantReady)
		}
	}
}

// The ingress Service is known by its name, whatever it asks for, even when its addresses were
// not read: a pass over a guest that asks for none takes it out only where it is.
func TestServingSaysWhetherTheIngressServiceIsThere(t *testing.T) {
	other := netip.MustParseAddr("10.9.9.9")
	for _, tc := range []struct {
		name     string
		services []ServiceState
		want     bool
	}{
		{"none", nil, false},
		{"another Service", []ServiceState{{Namespace: IngressNamespace, Name: "rke2-traefik", Asks: []netip.Addr{other}}}, false},
		{"the same name elsewhere", []ServiceState{{Namespace: "default", Name: IngressServiceName}}, false},
		{"asking for another address", []ServiceState{{Namespace: IngressNamespace, Name: IngressServiceName, Asks: []netip.Addr{other}}}, true},
		{"oversized", []ServiceState{{Namespace: IngressNamespace, Name: IngressServiceName, Oversized: true}}, true},
	} {
		if got := ServingOf(nil, tc.services, "", []netip.Addr{netip.MustParseAddr("10.0.0.1")}).Ingress; got != tc.want {
			t.Errorf("%s: Ingress %t; want %t", tc.name, got, tc.want)
		}
	}
}
