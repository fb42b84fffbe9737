package kubevipconfig

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// What the operator reads back from a guest to say whether its addresses are served. Anyone who
// may create a Service in one namespace of a guest shapes this read, so it is budgeted as a
// whole, not answer by answer: one DaemonSet (two while the operator's is missing, see
// KubevipRef); at most MaxServices Services in at most
// MaxServicePages pages and MaxServedBytes; at most MaxServiceAddresses addresses of a Service
// looked at; only the addresses of the guest's own FloatingIPs kept; and, only while no kube-vip
// pod is ready, at most MaxPods pods. Where a limit is reached the read stops and says which.
const (
	// LoadBalancerIPsAnnotation is where kube-vip-cloud-provider (v0.0.12,
	// pkg/provider/loadBalancer.go) writes the addresses a Service gets, and where kube-vip reads
	// them.
	LoadBalancerIPsAnnotation = "kube-vip.io/loadbalancerIPs"
	// ImplementationLabel marks the Services kube-vip-cloud-provider handles: its own lookup of the
	// addresses in use lists Services by it.
	ImplementationLabel = "implementation=kube-vip"
	// MaxServices bounds the Services read in one look.
	MaxServices = 200
	// ServicePage is how many Services one request asks for: ten Services whose annotations are
	// at the API server's limit (256 KiB each) still fit one answer's budget (pkg/guest).
	ServicePage = 10
	// MaxServicePages bounds the requests of one look: the pages MaxServices needs. A guest that
	// answers pages with fewer Services, or none, and always one more to come, is asked no more.
	MaxServicePages = MaxServices / ServicePage
	// MaxServedBytes bounds the Services of one look together, as each takes on the wire: two
	// hundred ordinary Services take about 600 KiB.
	MaxServedBytes = 8 << 20
	// MaxServiceAddresses bounds the addresses a Service may ask for (its annotation) or hold (its
	// status): a Service naming more is reported by name and its addresses are not read.
	MaxServiceAddresses = 16
	// MaxPods bounds the pods read to tell why kube-vip is not ready.
	MaxPods = 5
	// maxNamed is how many Services a limit's message names.
	maxNamed = 5
)

// Serving is what a guest shows of what serves its addresses.
type Serving struct {
	// Kubevip is the operator's own kube-vip DaemonSet; nil where the operator installs none, so
	// that whatever kube-vip the guest runs is judged by the Services alone.
	Kubevip *DaemonSetState
	// Services are the LoadBalancer Services kube-vip-cloud-provider handles that ask for or hold
	// one of the addresses asked about, by name.
	Services []ServiceState
	// Limited says which limit stopped the read before it saw every such Service; "" when none did.
	Limited string
}

// DaemonSetState is a kube-vip DaemonSet as its status says, and why no pod of it is ready.
type DaemonSetState struct {
	Namespace, Name string
	Found           bool
	// Observed is false while the DaemonSet controller has not seen the newest spec yet.
	Observed       bool
	Desired, Ready int32
	Why            string
}

// ServiceState is one Service: which of the addresses asked about it asks for and which its
// status holds (kube-vip sets it once it has bound the address).
type ServiceState struct {
	Namespace, Name string
	Asks, Holds     []netip.Addr
}

func (s ServiceState) String() string { return s.Namespace + "/" + s.Name }

// KubevipRef names the operator's kube-vip DaemonSet in a guest and the release it belongs to.
type KubevipRef struct {
	Namespace, Name string
	// Release is the kube-vip release's name. While Name is not in the guest, a DaemonSet of that
	// release in Namespace named as the kube-vip chart names its objects by default
	// (LegacyKubevipName), which is how the original kube-fip-operator installed kube-vip, stands
	// for it: such a guest is served by that one until an upgrade of the release replaces it.
	Release string
}

// LegacyKubevipName is the name the kube-vip chart gives its DaemonSet without a nameOverride.
const LegacyKubevipName = "kube-vip"

// Helm's annotations naming the release an object belongs to.
const (
	helmReleaseNameAnnotation      = "meta.helm.sh/release-name"
	helmReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// ReadServing reads what serves the addresses addrs of a guest: the operator's own kube-vip
// DaemonSet when kubevip is not nil, and the Services kube-vip-cloud-provider handles, of which it
// keeps only those that ask for or hold one of addrs.
func ReadServing(ctx context.Context, core corev1client.CoreV1Interface, apps appsv1client.AppsV1Interface, kubevip *KubevipRef, addrs []netip.Addr) (Serving, error) {
	var s Serving
	if kubevip != nil {
		ds, err := readKubevipState(ctx, core, apps, *kubevip)
		if err != nil {
			return s, err
		}
		s.Kubevip = ds
	}
	var r serviceRead
	opts := metav1.ListOptions{LabelSelector: ImplementationLabel, Limit: ServicePage}
	for pages := 1; ; pages++ {
		list, err := core.Services(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return s, fmt.Errorf("listing the guest's kube-vip Services: %w", err)
		}
		for i := range list.Items {
			if !r.add(&list.Items[i], addrs) {
				break
			}
		}
		switch {
		case r.limited != "" || list.Continue == "":
		case r.read == MaxServices:
			r.limited = fmt.Sprintf("the guest has more than %d kube-vip Services: only the first %d were read", MaxServices, MaxServices)
		case pages == MaxServicePages:
			r.limited = fmt.Sprintf("the guest answered %d pages of kube-vip Services (%d Services) and still had more: no more were asked for", pages, r.read)
		default:
			opts.Continue = list.Continue
			continue
		}
		break
	}
	s.Services, s.Limited = r.services, r.message()
	slices.SortFunc(s.Services, func(a, b ServiceState) int { return strings.Compare(a.String(), b.String()) })
	return s, nil
}

// serviceRead is what one look has read of the Services so far, and what it cost.
type serviceRead struct {
	read     int
	bytes    int
	services []ServiceState
	// oversized are the Services that name more than MaxServiceAddresses addresses.
	oversized []string
	limited   string
}

// add takes one Service of a page, keeping it when it asks for or holds one of addrs. It says
// false once a limit is reached: the Service is not read, and the look ends.
func (r *serviceRead) add(svc *corev1.Service, addrs []netip.Addr) bool {
	if r.read == MaxServices {
		r.limited = fmt.Sprintf("the guest has more than %d kube-vip Services: only the first %d were read", MaxServices, MaxServices)
		return false
	}
	if r.bytes += svc.Size(); r.bytes > MaxServedBytes {
		r.limited = fmt.Sprintf("the guest's kube-vip Services take more than %d MiB: only the first %d were read", MaxServedBytes>>20, r.read)
		return false
	}
	r.read++
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return true
	}
	st, ok := serviceState(svc, addrs)
	switch {
	case !ok:
		r.oversized = append(r.oversized, st.String())
	case len(st.Asks) > 0 || len(st.Holds) > 0:
		r.services = append(r.services, st)
	}
	return true
}

// message says what the look did not read: the limit that ended it, and the Services whose
// addresses were not read.
func (r *serviceRead) message() string {
	var parts []string
	if r.limited != "" {
		parts = append(parts, r.limited)
	}
	if n := len(r.oversized); n > 0 {
		parts = append(parts, fmt.Sprintf("%d Services name more than %d addresses each, and their addresses were not read: %s",
			n, MaxServiceAddresses, redact.Names(r.oversized, maxNamed)))
	}
	return strings.Join(parts, "; ")
}

// serviceState is what svc asks for and holds of addrs. It looks at no more than
// MaxServiceAddresses addresses of the annotation and of the status each; false when svc names
// more, and then it keeps none.
func serviceState(svc *corev1.Service, addrs []netip.Addr) (ServiceState, bool) {
	st := ServiceState{Namespace: shortName(svc.Namespace), Name: shortName(svc.Name)}
	keep := func(into []netip.Addr, text string) []netip.Addr {
		a, err := netip.ParseAddr(strings.TrimSpace(text))
		if err == nil && slices.Contains(addrs, a) && !slices.Contains(into, a) {
			into = append(into, a)
		}
		return into
	}
	if len(svc.Status.LoadBalancer.Ingress) > MaxServiceAddresses {
		return st, false
	}
	named := 0
	for part := range strings.SplitSeq(svc.Annotations[LoadBalancerIPsAnnotation], ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		if named++; named > MaxServiceAddresses {
			return ServiceState{Namespace: st.Namespace, Name: st.Name}, false
		}
		st.Asks = keep(st.Asks, part)
	}
	st.Asks = keep(st.Asks, svc.Spec.LoadBalancerIP)
	for _, in := range svc.Status.LoadBalancer.Ingress {
		st.Holds = keep(st.Holds, in.IP)
	}
	return st, true
}

// readKubevipState reads the state of the kube-vip DaemonSet ref names, or, while it is not there, of
// the original kube-fip-operator's of the same release (see KubevipRef).
func readKubevipState(ctx context.Context, core corev1client.CoreV1Interface, apps appsv1client.AppsV1Interface, ref KubevipRef) (*DaemonSetState, error) {
	st := &DaemonSetState{Namespace: ref.Namespace, Name: ref.Name}
	ds, err := readDaemonSet(ctx, apps, ref.Namespace, ref.Name)
	if ds == nil && err == nil && ref.Release != "" && ref.Name != LegacyKubevipName {
		ds, err = readDaemonSet(ctx, apps, ref.Namespace, LegacyKubevipName)
		if ds != nil && (ds.Annotations[helmReleaseNameAnnotation] != ref.Release || ds.Annotations[helmReleaseNamespaceAnnotation] != ref.Namespace) {
			ds = nil // another release's, such as the Harvester cloud provider's
		}
		if ds != nil {
			st.Name = LegacyKubevipName
		}
	}
	if err != nil || ds == nil {
		return st, err
	}
	st.Found = true
	st.Observed = ds.Status.ObservedGeneration >= ds.Generation
	st.Desired, st.Ready = ds.Status.DesiredNumberScheduled, ds.Status.NumberReady
	if st.Observed && st.Desired > 0 && st.Ready == 0 {
		st.Why = whyNotReady(ctx, core, ds)
	}
	return st, nil
}

// readDaemonSet reads DaemonSet namespace/name; nil when it is not there.
func readDaemonSet(ctx context.Context, apps appsv1client.AppsV1Interface, namespace, name string) (*appsv1.DaemonSet, error) {
	ds, err := apps.DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading kube-vip's DaemonSet %s/%s: %w", namespace, name, err)
	}
	return ds, nil
}

// whyNotReady reads at most MaxPods pods of ds for what keeps them from being ready: a container
// waiting (ErrImagePull, CrashLoopBackOff, ...) or a pod not scheduled, naming the pod and its
// node (kube-vip exits at start on a node that lacks the interface it is told). "" when none says.
func whyNotReady(ctx context.Context, core corev1client.CoreV1Interface, ds *appsv1.DaemonSet) string {
	if ds.Spec.Selector == nil || len(ds.Spec.Selector.MatchLabels) == 0 {
		return ""
	}
	selector := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: ds.Spec.Selector.MatchLabels})
	pods, err := core.Pods(ds.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: MaxPods})
	if err != nil {
		return ""
	}
	for i := range min(len(pods.Items), MaxPods) {
		p := &pods.Items[i]
		pod := "pod " + shortName(p.Name)
		if p.Spec.NodeName != "" {
			pod += " on node " + shortName(p.Spec.NodeName)
		}
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil && w.Reason != "" {
				return fmt.Sprintf("%s: container %s is waiting: %s", pod, shortName(c.Name), shortName(w.Reason))
			}
			if t := c.State.Terminated; t != nil && t.Reason != "" {
				return fmt.Sprintf("%s: container %s terminated: %s", pod, shortName(c.Name), shortName(t.Reason))
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
func shortName(s string) string { return redact.Shorten(s, 63) }
