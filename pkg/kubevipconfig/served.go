package kubevipconfig

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// What the operator reads back from a guest to say whether its addresses are served (pkg/guestwatch
// keeps it, watched). Anyone who may create a Service in one namespace of a guest shapes this
// read, so a look at the Services is budgeted as a whole, not answer by answer: at most MaxServices
// Services in at most MaxServicePages pages and MaxServedBytes; at most MaxServiceAddresses
// addresses of a Service looked at; of the operator's kube-vip DaemonSet (or the original
// operator's, see KubevipRef) only its counts, and, only while no kube-vip pod is ready, at most
// MaxPods pods. Where a limit is reached the read stops and says which.
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
	// Ingress says the guest has a LoadBalancer Service kube-vip-cloud-provider handles by the
	// name of the operator's ingress Service (IngressNamespace, IngressServiceName), whatever
	// addresses it names. Its absence is known only where Limited is "".
	Ingress bool
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
	// Oversized says the Service names more than MaxServiceAddresses addresses: none is read.
	Oversized bool
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

// ServingOf is what serves the addresses addrs of a guest, from what is known of it: the operator's
// own kube-vip DaemonSet (nil where it installs none), every kube-vip Service read (see
// ServiceAddresses), of which only those that ask for or hold one of addrs are kept, and the limit
// that kept the read from seeing every Service ("" when none did).
func ServingOf(kubevip *DaemonSetState, services []ServiceState, limited string, addrs []netip.Addr) Serving {
	s := Serving{Kubevip: kubevip}
	var oversized []string
	for _, svc := range services {
		if svc.Namespace == IngressNamespace && svc.Name == IngressServiceName {
			s.Ingress = true
		}
		if svc.Oversized {
			oversized = append(oversized, svc.String())
			continue
		}
		st := ServiceState{Namespace: svc.Namespace, Name: svc.Name}
		for _, a := range svc.Asks {
			if slices.Contains(addrs, a) {
				st.Asks = append(st.Asks, a)
			}
		}
		for _, a := range svc.Holds {
			if slices.Contains(addrs, a) {
				st.Holds = append(st.Holds, a)
			}
		}
		if len(st.Asks) > 0 || len(st.Holds) > 0 {
			s.Services = append(s.Services, st)
		}
	}
	slices.SortFunc(s.Services, func(a, b ServiceState) int { return strings.Compare(a.String(), b.String()) })
	slices.Sort(oversized)
	var parts []string
	if limited != "" {
		parts = append(parts, limited)
	}
	if n := len(oversized); n > 0 {
		parts = append(parts, fmt.Sprintf("%d Services name more than %d addresses each, and their addresses were not read: %s",
			n, MaxServiceAddresses, redact.Names(oversized, maxNamed)))
	}
	s.Limited = strings.Join(parts, "; ")
	return s
}

// ServiceList is one look at every kube-vip Service of a guest: each LoadBalancer Service's
// addresses (ServiceAddresses), the limit that ended the look ("" when none did), and the
// resourceVersion of the list, from which a watch goes on.
type ServiceList struct {
	Services        []ServiceState
	Limited         string
	ResourceVersion string
}

// ListServices reads the guest's kube-vip Services in pages, within the budget of one look (see
// the constants above).
func ListServices(ctx context.Context, core corev1client.CoreV1Interface) (ServiceList, error) {
	var r serviceRead
	var out ServiceList
	opts := metav1.ListOptions{LabelSelector: ImplementationLabel, Limit: ServicePage}
	for pages := 1; ; pages++ {
		list, err := core.Services(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return out, fmt.Errorf("listing the guest's kube-vip Services: %w", err)
		}
		if pages == 1 {
			// A paged list is one snapshot, at the first page's resourceVersion.
			out.ResourceVersion = list.ResourceVersion
		}
		for i := range list.Items {
			if !r.add(&list.Items[i]) {
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
	out.Services, out.Limited = r.services, r.limited
	return out, nil
}

// serviceRead is what one look has read of the Services so far, and what it cost.
type serviceRead struct {
	read     int
	bytes    int
	services []ServiceState
	limited  string
}

// add takes one Service of a page, keeping the addresses of a LoadBalancer Service. It says false
// once a limit is reached: the Service is not read, and the look ends.
func (r *serviceRead) add(svc *corev1.Service) bool {
	if r.read == MaxServices {
		r.limited = fmt.Sprintf("the guest has more than %d kube-vip Services: only the first %d were read", MaxServices, MaxServices)
		return false
	}
	if r.bytes += svc.Size(); r.bytes > MaxServedBytes {
		r.limited = fmt.Sprintf("the guest's kube-vip Services take more than %d MiB: only the first %d were read", MaxServedBytes>>20, r.read)
		return false
	}
	r.read++
	if st, ok := ServiceAddresses(svc); ok {
		r.services = append(r.services, st)
	}
	return true
}

// ServiceAddresses is what a kube-vip Service asks for (its annotation and spec.loadBalancerIP)
// and holds (its status); false for a Service of another type, which kube-vip does not serve. It
// looks at no more than MaxServiceAddresses addresses of the annotation and of the status each: a
// Service naming more is Oversized, and none of its addresses is kept.
func ServiceAddresses(svc *corev1.Service) (ServiceState, bool) {
	st := ServiceState{Namespace: shortName(svc.Namespace), Name: shortName(svc.Name)}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return st, false
	}
	keep := func(into []netip.Addr, text string) []netip.Addr {
		a, err := netip.ParseAddr(strings.TrimSpace(text))
		if err == nil && !slices.Contains(into, a) {
			into = append(into, a)
		}
		return into
	}
	oversized := ServiceState{Namespace: st.Namespace, Name: st.Name, Oversized: true}
	if len(svc.Status.LoadBalancer.Ingress) > MaxServiceAddresses {
		return oversized, true
	}
	named := 0
	for part := range strings.SplitSeq(svc.Annotations[LoadBalancerIPsAnnotation], ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		if named++; named > MaxServiceAddresses {
			return oversized, true
		}
		st.Asks = keep(st.Asks, part)
	}
	st.Asks = keep(st.Asks, svc.Spec.LoadBalancerIP)
	for _, in := range svc.Status.LoadBalancer.Ingress {
		st.Holds = keep(st.Holds, in.IP)
	}
	return st, true
}

// DaemonSetStatus is what the operator keeps of a watched kube-vip DaemonSet: what KubevipState
// judges, and the labels its pods are selected by, for WhyNotReady.
type DaemonSetStatus struct {
	Generation, ObservedGeneration int64
	Desired, Ready                 int32
	// Release and ReleaseNamespace are Helm's annotations naming the release it belongs to.
	Release, ReleaseNamespace string
	Selector                  map[string]string
}

// maxSelectorLabels bounds the labels of a DaemonSet's selector kept: kube-vip's chart uses two.
const maxSelectorLabels = 8

// DaemonSetStatusOf is what the operator keeps of ds.
func DaemonSetStatusOf(ds *appsv1.DaemonSet) DaemonSetStatus {
	st := DaemonSetStatus{Generation: ds.Generation, ObservedGeneration: ds.Status.ObservedGeneration,
		Desired: ds.Status.DesiredNumberScheduled, Ready: ds.Status.NumberReady,
		Release: shortName(ds.Annotations[helmReleaseNameAnnotation]), ReleaseNamespace: shortName(ds.Annotations[helmReleaseNamespaceAnnotation])}
	if sel := ds.Spec.Selector; sel != nil && len(sel.MatchLabels) <= maxSelectorLabels {
		st.Selector = maps.Clone(sel.MatchLabels)
	}
	return st
}

// KubevipState judges the kube-vip DaemonSet ref names from the DaemonSets known of the guest
// (get says whether one of that name is there, and what it is), or, while it is not there, the
// original kube-fip-operator's of the same release (see KubevipRef). Why stays to be told by
// WhyNotReady.
func KubevipState(ref KubevipRef, get func(name string) (DaemonSetStatus, bool)) (*DaemonSetState, DaemonSetStatus) {
	st := &DaemonSetState{Namespace: ref.Namespace, Name: ref.Name}
	ds, found := get(ref.Name)
	if !found && ref.Release != "" && ref.Name != LegacyKubevipName {
		ds, found = get(LegacyKubevipName)
		if found && (ds.Release != ref.Release || ds.ReleaseNamespace != ref.Namespace) {
			found = false // another release's, such as the Harvester cloud provider's
		}
		if found {
			st.Name = LegacyKubevipName
		}
	}
	if !found {
		return st, DaemonSetStatus{}
	}
	st.Found = true
	st.Observed = ds.ObservedGeneration >= ds.Generation
	st.Desired, st.Ready = ds.Desired, ds.Ready
	return st, ds
}

// NeedsWhy says whether st calls for WhyNotReady: its pods are scheduled and none is ready.
func (st *DaemonSetState) NeedsWhy() bool {
	return st != nil && st.Found && st.Observed && st.Desired > 0 && st.Ready == 0
}

// WhyNotReady reads at most MaxPods pods of a kube-vip DaemonSet in namespace whose pods carry the
// labels selector, for what keeps them from being ready: a container waiting (ErrImagePull,
// CrashLoopBackOff, ...) or a pod not scheduled, naming the pod and its node (kube-vip exits at
// start on a node that lacks the interface it is told). "" when none says.
func WhyNotReady(ctx context.Context, core corev1client.CoreV1Interface, namespace string, selector map[string]string) string {
	if len(selector) == 0 {
		return ""
	}
	sel := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: selector})
	pods, err := core.Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel, Limit: MaxPods})
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
