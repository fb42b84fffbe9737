// Package cloudprovider reads and serves kube-vip-cloud-provider's ConfigMap as the real provider does:
// the tests check what the operator writes against the receiver's contract, not against its own output.
package cloudprovider

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"go4.org/netipx"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// The kube-vip-cloud-provider contract, as kube-vip/kube-vip-cloud-provider v0.0.12 implements it
// (pkg/provider/provider.go and loadBalancer.go, pkg/ipam).
const (
	ProviderNamespaceEnv   = "KUBEVIP_NAMESPACE"
	ProviderConfigMapEnv   = "KUBEVIP_CONFIG_MAP"
	ProviderDefaultNS      = "kube-system"
	ProviderDefaultCM      = "kubevip"
	LoadBalancerIPsKey     = "kube-vip.io/loadbalancerIPs"
	ImplementationLabel    = "implementation"
	ImplementationKubevip  = "kube-vip"
	providerMaxEnumeration = 1 << 16
)

// ErrNoPools is the provider's answer when its ConfigMap has none of the keys it looks for.
var ErrNoPools = errors.New("no address pools could be found")

// ProviderConfigMap is where the provider running as Deployment namespace/name reads its pools:
// the container's KUBEVIP_NAMESPACE and KUBEVIP_CONFIG_MAP, kube-system and kubevip when unset.
func ProviderConfigMap(ctx context.Context, kube kubernetes.Interface, namespace, name string) (string, string, error) {
	d, err := kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	ns, cm := providerEnv(d)
	return ns, cm, nil
}

func providerEnv(d *appsv1.Deployment) (string, string) {
	ns, cm := "", ""
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			switch e.Name {
			case ProviderNamespaceEnv:
				ns = e.Value
			case ProviderConfigMapEnv:
				cm = e.Value
			}
		}
	}
	if ns == "" {
		ns = ProviderDefaultNS
	}
	if cm == "" {
		cm = ProviderDefaultCM
	}
	return ns, cm
}

// ProviderPool is the pool the provider finds for a LoadBalancer Service in serviceNamespace: the
// first of cidr-<ns>, cidr-global, range-<ns>, range-global that exists in the ConfigMap, expanded
// to the addresses the provider may hand out (an IPv4 address ending in .0 or .255 never is). The
// key that matched is returned too.
func ProviderPool(ctx context.Context, kube kubernetes.Interface, cmNamespace, cmName, serviceNamespace string) ([]netip.Addr, string, error) {
	cm, err := kube.CoreV1().ConfigMaps(cmNamespace).Get(ctx, cmName, metav1.GetOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("%w: reading %s/%s: %v", ErrNoPools, cmNamespace, cmName, err)
	}
	for _, key := range []string{"cidr-" + serviceNamespace, "cidr-global", "range-" + serviceNamespace, "range-global"} {
		value, ok := cm.Data[key]
		if !ok {
			continue
		}
		addrs, err := expandPool(value)
		return addrs, key, err
	}
	return nil, "", ErrNoPools
}

// expandPool reads a pool the way the provider does: a value with a '/' is a comma-separated list
// of CIDRs (host bits masked), anything else a list of a-b ranges; no whitespace is trimmed.
func expandPool(value string) ([]netip.Addr, error) {
	if value == "" {
		return nil, errors.New("could not discover address: pool is not specified")
	}
	var b netipx.IPSetBuilder
	for _, part := range strings.Split(value, ",") {
		if strings.Contains(value, "/") {
			p, err := netip.ParsePrefix(part)
			if err != nil {
				return nil, fmt.Errorf("parsing CIDR %q: %w", part, err)
			}
			b.AddPrefix(p.Masked())
			continue
		}
		from, to, ok := strings.Cut(part, "-")
		start, err1 := netip.ParseAddr(from)
		end, err2 := netip.ParseAddr(to)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("parsing range %q", part)
		}
		b.AddRange(netipx.IPRangeFrom(start, end))
	}
	set, err := b.IPSet()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, r := range set.Ranges() {
		for a := r.From(); a.IsValid() && a.Compare(r.To()) <= 0; a = a.Next() {
			if len(out) == providerMaxEnumeration {
				return out, nil
			}
			if a.Is4() && (a.As4()[3] == 0 || a.As4()[3] == 255) {
				continue
			}
			out = append(out, a)
		}
	}
	return out, nil
}

// ServeLoadBalancer does what the provider does for a LoadBalancer Service without an address:
// the first address of its pool that no Service labelled implementation=kube-vip holds goes into
// the kube-vip.io/loadbalancerIPs annotation, with the label, for kube-vip to advertise.
func ServeLoadBalancer(ctx context.Context, kube kubernetes.Interface, cmNamespace, cmName string, svc *corev1.Service) (netip.Addr, error) {
	pool, _, err := ProviderPool(ctx, kube, cmNamespace, cmName, svc.Namespace)
	if err != nil {
		return netip.Addr{}, err
	}
	used := map[netip.Addr]bool{}
	others, err := kube.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: ImplementationLabel + "=" + ImplementationKubevip})
	if err != nil {
		return netip.Addr{}, err
	}
	for _, o := range others.Items {
		for _, s := range strings.Split(o.Annotations[LoadBalancerIPsKey], ",") {
			if a, err := netip.ParseAddr(s); err == nil {
				used[a] = true
			}
		}
	}
	var pick netip.Addr
	for _, a := range pool {
		if !used[a] {
			pick = a
			break
		}
	}
	if !pick.IsValid() {
		return netip.Addr{}, fmt.Errorf("no addresses available in [%s] pool", svc.Namespace)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := kube.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Labels[ImplementationLabel] = ImplementationKubevip
		s.Annotations[LoadBalancerIPsKey] = pick.String()
		_, err = kube.CoreV1().Services(svc.Namespace).Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	return pick, err
}
