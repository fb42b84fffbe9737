package kubevipconfig

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// IngressNamespace is where RKE2 runs its bundled ingress controller, and where the operator keeps
// the Service that puts a guest's address on it: a Service selects pods of its own namespace only.
const IngressNamespace = metav1.NamespaceSystem

// IngressServiceName is the Service the operator keeps for a guest's ingress controller. It is no
// name either chart uses, so that Helm never takes it for its own.
const IngressServiceName = "kube-fip-ingress"

// IngressController is an ingress controller RKE2 bundles, as its chart labels its pods and names
// their ports (rancher/rke2-charts, read for rke2-ingress-nginx 4.10.401 to 4.15.109 and
// rke2-traefik 25.0.000 to 41.2.001: the same in all of them).
type IngressController struct {
	// Name is the chart's.
	Name string
	// Selector is the labels of the controller's pods, as its DaemonSet selects them.
	Selector map[string]string
	// HTTP and HTTPS are the names of the pods' ports for plain and TLS traffic.
	HTTP, HTTPS string
}

// IngressControllers are the controllers the operator knows, in the order RKE2 made them its
// default: rke2-ingress-nginx through RKE2 1.35, rke2-traefik for clusters created with 1.36 or
// later. No other is ever selected.
func IngressControllers() []IngressController {
	return []IngressController{
		{Name: "rke2-ingress-nginx", HTTP: "http", HTTPS: "https", Selector: map[string]string{
			"app.kubernetes.io/name": "rke2-ingress-nginx", "app.kubernetes.io/instance": "rke2-ingress-nginx",
			"app.kubernetes.io/component": "controller"}},
		{Name: "rke2-traefik", HTTP: "web", HTTPS: "websecure", Selector: map[string]string{
			"app.kubernetes.io/name": "rke2-traefik", "app.kubernetes.io/instance": "rke2-traefik-kube-system"}},
	}
}

// FindIngressController says which of IngressControllers runs pods in IngressNamespace; none, with
// why, when none does or when more than one does (the operator does not choose between them).
func FindIngressController(ctx context.Context, core corev1client.PodsGetter) (*IngressController, string, error) {
	var found []IngressController
	for _, c := range IngressControllers() {
		pods, err := core.Pods(IngressNamespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set(c.Selector).String(), Limit: 1})
		if err != nil {
			return nil, "", fmt.Errorf("looking for the pods of %s in %s: %w", c.Name, IngressNamespace, err)
		}
		if len(pods.Items) > 0 {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		names := make([]string, 0, 2)
		for _, c := range IngressControllers() {
			names = append(names, c.Name)
		}
		return nil, fmt.Sprintf("no pod of %s runs in %s", strings.Join(names, " or "), IngressNamespace), nil
	case 1:
		return &found[0], "", nil
	}
	return nil, fmt.Sprintf("pods of both %s and %s run in %s: the operator does not choose between them", found[0].Name, found[1].Name, IngressNamespace), nil
}

// IngressResult says what EnsureIngressService did.
type IngressResult string

const (
	IngressUnchanged IngressResult = "unchanged"
	IngressCreated   IngressResult = "created"
	IngressUpdated   IngressResult = "updated"
)

// IngressService is the Service that puts addrs (one per family at most) on controller c's HTTP
// and HTTPS ports: a LoadBalancer Service kube-vip-cloud-provider handles (its label and its
// annotation naming the addresses), with externalTrafficPolicy Cluster, so that the address
// answers on whichever node kube-vip announces it from, and labelled as the operator's.
func IngressService(c IngressController, addrs []netip.Addr) *corev1.Service {
	texts := make([]string, 0, len(addrs))
	var families []corev1.IPFamily
	for _, a := range addrs {
		texts = append(texts, a.String())
		if a.Is4() {
			families = append(families, corev1.IPv4Protocol)
		} else {
			families = append(families, corev1.IPv6Protocol)
		}
	}
	policy := corev1.IPFamilyPolicySingleStack
	if len(families) > 1 {
		policy = corev1.IPFamilyPolicyPreferDualStack
	}
	implementation, kubevip, _ := strings.Cut(ImplementationLabel, "=")
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: IngressServiceName, Namespace: IngressNamespace,
			Labels:      map[string]string{ManagedByLabel: ManagedByValue, implementation: kubevip},
			Annotations: map[string]string{LoadBalancerIPsAnnotation: strings.Join(texts, ",")},
		},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			Selector:              maps.Clone(c.Selector),
			IPFamilyPolicy:        &policy,
			IPFamilies:            families,
			Ports: []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString(c.HTTP)},
				{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromString(c.HTTPS)},
			},
		},
	}
}

// EnsureIngressService keeps the guest's IngressServiceName as IngressService(c, addrs) makes it:
// created when missing, its labels, annotation, selector, ports and policies put back when they
// differ. A Service of that name the operator did not write is refused and left as it is.
func EnsureIngressService(ctx context.Context, core corev1client.ServicesGetter, c IngressController, addrs []netip.Addr) (IngressResult, error) {
	if len(addrs) == 0 || len(addrs) > 2 || len(addrs) == 2 && addrs[0].Is4() == addrs[1].Is4() {
		return "", fmt.Errorf("the ingress Service takes one address, or one of each family, not %v", addrs)
	}
	services := core.Services(IngressNamespace)
	want := IngressService(c, addrs)
	cur, err := services.Get(ctx, IngressServiceName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := services.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return "", fmt.Errorf("creating the Service %s/%s: %w", IngressNamespace, IngressServiceName, err)
		}
		return IngressCreated, nil
	case err != nil:
		return "", fmt.Errorf("reading the Service %s/%s: %w", IngressNamespace, IngressServiceName, err)
	}
	if cur.Labels[ManagedByLabel] != ManagedByValue {
		return "", fmt.Errorf("the Service %s/%s is not the operator's (no label %s=%s): it is left as it is; delete or rename it",
			IngressNamespace, IngressServiceName, ManagedByLabel, ManagedByValue)
	}
	if sameIngressService(cur, want) {
		return IngressUnchanged, nil
	}
	next := cur.DeepCopy()
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	maps.Copy(next.Labels, want.Labels)
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	maps.Copy(next.Annotations, want.Annotations)
	next.Spec.Type, next.Spec.ExternalTrafficPolicy = want.Spec.Type, want.Spec.ExternalTrafficPolicy
	next.Spec.Selector, next.Spec.Ports = want.Spec.Selector, mergePorts(cur.Spec.Ports, want.Spec.Ports)
	next.Spec.IPFamilyPolicy, next.Spec.IPFamilies = want.Spec.IPFamilyPolicy, want.Spec.IPFamilies
	if _, err := services.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		return "", fmt.Errorf("updating the Service %s/%s: %w", IngressNamespace, IngressServiceName, err)
	}
	return IngressUpdated, nil
}

// sameIngressService says whether cur has every field want sets, as want sets it; fields the API
// server fills in (the cluster IPs, the node ports) are not compared.
func sameIngressService(cur, want *corev1.Service) bool {
	for k, v := range want.Labels {
		if cur.Labels[k] != v {
			return false
		}
	}
	if cur.Annotations[LoadBalancerIPsAnnotation] != want.Annotations[LoadBalancerIPsAnnotation] ||
		cur.Spec.Type != want.Spec.Type || cur.Spec.ExternalTrafficPolicy != want.Spec.ExternalTrafficPolicy ||
		!maps.Equal(cur.Spec.Selector, want.Spec.Selector) || cur.Spec.IPFamilyPolicy == nil ||
		*cur.Spec.IPFamilyPolicy != *want.Spec.IPFamilyPolicy || !slices.Equal(cur.Spec.IPFamilies, want.Spec.IPFamilies) ||
		len(cur.Spec.Ports) != len(want.Spec.Ports) {
		return false
	}
	for i, p := range want.Spec.Ports {
		c := cur.Spec.Ports[i]
		if c.Name != p.Name || c.Protocol != p.Protocol || c.Port != p.Port || c.TargetPort != p.TargetPort {
			return false
		}
	}
	return true
}

// mergePorts is want, each port keeping the node port the API server gave it in cur.
func mergePorts(cur, want []corev1.ServicePort) []corev1.ServicePort {
	out := slices.Clone(want)
	for i := range out {
		for _, c := range cur {
			if c.Name == out[i].Name && c.Port == out[i].Port && c.Protocol == out[i].Protocol {
				out[i].NodePort = c.NodePort
			}
		}
	}
	return out
}

// RemoveIngressService deletes the guest's IngressServiceName when it is the operator's (labelled
// so), guarded by its UID, and reports whether it did.
func RemoveIngressService(ctx context.Context, core corev1client.ServicesGetter) (bool, error) {
	services := core.Services(IngressNamespace)
	cur, err := services.Get(ctx, IngressServiceName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the Service %s/%s: %w", IngressNamespace, IngressServiceName, err)
	}
	if cur.Labels[ManagedByLabel] != ManagedByValue {
		return false, nil
	}
	err = services.Delete(ctx, IngressServiceName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("deleting the Service %s/%s: %w", IngressNamespace, IngressServiceName, err)
	}
	return err == nil, nil
}
