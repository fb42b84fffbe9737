package kubevipconfig

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// What the operator reads back from a guest to say whether its addresses are served, each read
// bounded: one DaemonSet, at most MaxServices Services, and, only while no kube-vip pod is ready,
// at most MaxPods pods.
const (
	// LoadBalancerIPsAnnotation is where kube-vip-cloud-provider (v0.0.12,
	// pkg/provider/loadBalancer.go) writes the addresses a Service gets, and where kube-vip reads
	// them.
	LoadBalancerIPsAnnotation = "kube-vip.io/loadbalancerIPs"
	// ImplementationLabel marks the Services kube-vip-cloud-provider handles: its own lookup of the
	// addresses in use lists Services by it.
	ImplementationLabel = "implementation=kube-vip"
	// MaxServices bounds the Services read in one look; more are reported, not read.
	MaxServices = 200
	// servicePage is how many Services one request asks for: a Service as the API server gives
	// it back, managed fields included, counts some hundred JSON values, and one answer from a
	// guest may hold only so many (pkg/guest).
	servicePage = 25
	// MaxPods bounds the pods read to tell why kube-vip is not ready.
	MaxPods = 5
)

// Serving is what a guest shows of what serves its addresses.
type Serving struct {
	// Kubevip is the operator's own kube-vip DaemonSet; nil where the operator installs none, so
	// that whatever kube-vip the guest runs is judged by the Services alone.
	Kubevip *DaemonSetState
	// Services are the LoadBalancer Services kube-vip-cloud-provider handles, by name.
	Services []ServiceState
	// More says there were more such Services than were read.
	More bool
}

// DaemonSetState is a kube-vip DaemonSet as its status says, and why no pod of it is ready.
type DaemonSetState struct {
	Namespace, Name string
	Found           bool
	// Observed is false while the DaemonSet controller has not seen the newest spec yet.
	Observed                bool
	Desired, Ready, Updated int32
	Why                     string
}

// ServiceState is one Service: the addresses it asks for and those its status holds, which kube-vip
// sets once it has bound the address.
type ServiceState struct {
	Namespace, Name string
	Asks, Holds     []netip.Addr
}

func (s ServiceState) String() string { return s.Namespace + "/" + s.Name }

// ReadServing reads what serves the guest's addresses: the DaemonSet namespace/name when name is
// not "" (the operator's own kube-vip), and the Services kube-vip-cloud-provider handles.
func ReadServing(ctx context.Context, core corev1client.CoreV1Interface, apps appsv1client.AppsV1Interface, namespace, name string) (Serving, error) {
	var s Serving
	if name != "" {
		ds, err := readDaemonSet(ctx, core, apps, namespace, name)
		if err != nil {
			return s, err
		}
		s.Kubevip = ds
	}
	opts := metav1.ListOptions{LabelSelector: ImplementationLabel, Limit: servicePage}
	for read := 0; ; {
		list, err := core.Services(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return s, fmt.Errorf("listing the guest's kube-vip Services: %w", err)
		}
		for i := range list.Items {
			if read == MaxServices {
				s.More = true
				break
			}
			read++
			if svc := &list.Items[i]; svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
				s.Services = append(s.Services, serviceState(svc))
			}
		}
		if list.Continue == "" || s.More {
			break
		}
		if read == MaxServices {
			s.More = true
			break
		}
		opts.Continue = list.Continue
	}
	sort.Slice(s.Services, func(i, j int) bool { return s.Services[i].String() < s.Services[j].String() })
	return s, nil
}

func readDaemonSet(ctx context.Context, core corev1client.CoreV1Interface, apps appsv1client.AppsV1Interface, namespace, name string) (*DaemonSetState, error) {
	st := &DaemonSetState{Namespace: namespace, Name: name}
	ds, err := apps.DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading kube-vip's DaemonSet %s/%s: %w", namespace, name, err)
	}
	st.Found = true
	st.Observed = ds.Status.ObservedGeneration >= ds.Generation
	st.Desired, st.Ready, st.Updated = ds.Status.DesiredNumberScheduled, ds.Status.NumberReady, ds.Status.UpdatedNumberScheduled
	if st.Observed && st.Desired > 0 && st.Ready == 0 {
		st.Why = whyNotReady(ctx, core, ds)
	}
	return st, nil
}

// whyNotReady reads at most MaxPods pods of ds for what keeps them from being ready: a container
// waiting (ErrImagePull, CrashLoopBackOff, ...) or a pod not scheduled. "" when none says.
func whyNotReady(ctx context.Context, core corev1client.CoreV1Interface, ds *appsv1.DaemonSet) string {
	if ds.Spec.Selector == nil || len(ds.Spec.Selector.MatchLabels) == 0 {
		return ""
	}
	selector := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: ds.Spec.Selector.MatchLabels})
	pods, err := core.Pods(ds.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: MaxPods})
	if err != nil {
		return ""
	}
	for i := range pods.Items {
		if i == MaxPods {
			break
		}
		p := &pods.Items[i]
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil && w.Reason != "" {
				return fmt.Sprintf("pod %s: container %s is waiting: %s", shortName(p.Name), shortName(c.Name), shortName(w.Reason))
			}
			if t := c.State.Terminated; t != nil && t.Reason != "" {
				return fmt.Sprintf("pod %s: container %s terminated: %s", shortName(p.Name), shortName(c.Name), shortName(t.Reason))
			}
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
				return fmt.Sprintf("pod %s is not scheduled: %s", shortName(p.Name), shortName(cond.Reason))
			}
		}
	}
	return ""
}

// shortName bounds a name or reason read from the guest for a message.
func shortName(s string) string {
	const max = 63
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

func serviceState(svc *corev1.Service) ServiceState {
	st := ServiceState{Namespace: svc.Namespace, Name: svc.Name}
	asks := map[netip.Addr]bool{}
	for _, part := range strings.Split(svc.Annotations[LoadBalancerIPsAnnotation], ",") {
		if a, err := netip.ParseAddr(strings.TrimSpace(part)); err == nil {
			asks[a] = true
		}
	}
	if a, err := netip.ParseAddr(svc.Spec.LoadBalancerIP); err == nil {
		asks[a] = true
	}
	for a := range asks {
		st.Asks = append(st.Asks, a)
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil {
			st.Holds = append(st.Holds, a)
		}
	}
	return st
}
