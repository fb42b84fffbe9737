// Package dns publishes a DNS name for each FloatingIP whose range asks for names (spec.dns):
// it writes the FloatingIP's DNSEndpoint (externaldns.k8s.io/v1alpha1), which one external-dns in
// the local cluster, run with --source=crd, turns into A and AAAA records, and shows on the
// FloatingIP's DNSPublished condition whether external-dns took it in. A record follows the
// address the FloatingIP holds; a FloatingIP that holds none, or whose range stops asking, loses
// its DNSEndpoint; a name another guest cluster has is refused, never overwritten.
package dns

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/controllers"
	"github.com/kubefip/kube-fip-operator/pkg/dnsname"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
	"github.com/kubefip/kube-fip-operator/pkg/status"
)

// HandlerName names the handlers of this package; it never changes.
const HandlerName = "kube-fip-dns"

// byNameIndex indexes the operator's DNSEndpoints by the names they publish.
const byNameIndex = "kubefip-dns-name"

type handler struct {
	fips      kubefipcontrollers.FloatingIPController
	ranges    kubefipcontrollers.FloatingIPRangeCache
	endpoints dynamic.NamespaceableResourceInterface
	informer  cache.SharedIndexInformer
	recorder  record.EventRecorder
	claims    claims
	timeout   time.Duration
}

// Register watches the operator's DNSEndpoints (optional: external-dns's CRD may not be installed)
// and runs the handler on FloatingIPs and ranges.
func Register(ctx context.Context, c *controllers.Context) error {
	h := &handler{fips: c.FloatingIPs, ranges: c.Ranges.Cache(), recorder: c.Recorder, timeout: 30 * time.Second}
	c.FloatingIPs.OnChange(ctx, HandlerName, h.sync)
	c.Ranges.OnChange(ctx, HandlerName, h.onRange)
	if !c.DNSEndpoints {
		// No rights on DNSEndpoints: a FloatingIP of a range that asks for names says so.
		return nil
	}
	dyn, err := dynamic.NewForConfig(c.RestConfig)
	if err != nil {
		return fmt.Errorf("creating the client of DNSEndpoints: %w", err)
	}
	informer := dynamicinformer.NewFilteredDynamicInformer(dyn, dnsname.Resource, "", 0,
		cache.Indexers{byNameIndex: indexByName}, func(o *metav1.ListOptions) { o.LabelSelector = dnsname.LabelFloatingIP })
	h.endpoints, h.informer = dyn.Resource(dnsname.Resource), informer.Informer()
	// A DNSEndpoint that changes (external-dns took it in) or goes wakes its FloatingIP.
	wake := func(obj interface{}) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GetLabels()[dnsname.LabelFloatingIP] == u.GetName() {
			h.fips.Enqueue(u.GetNamespace(), u.GetName())
		}
	}
	// One that goes wakes those refused its names too: the watch may have shown it still when
	// they were last looked at.
	gone := func(obj interface{}) {
		wake(obj)
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if names, _ := indexByName(obj); len(names) > 0 {
			h.wake(h.claims.refusedFor(names))
		}
	}
	if _, err := h.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: wake,
		UpdateFunc: func(_, obj interface{}) { wake(obj) }, DeleteFunc: gone}); err != nil {
		return fmt.Errorf("watching DNSEndpoints: %w", err)
	}
	c.AddOptionalInformer("DNSEndpoints", dnsname.Resource, h.informer)
	c.OnStart(func(ctx context.Context) { go h.wakeWhenServed(ctx) })
	return nil
}

// indexByName indexes a DNSEndpoint by the names it publishes, at most a few: the operator's hold
// two.
func indexByName(obj interface{}) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	seen, err := dnsname.Read(u)
	if err != nil {
		return nil, nil
	}
	return dnsname.NamesOf(seen.Endpoints), nil
}

// wakeWhenServed wakes every FloatingIP once the DNSEndpoint watch has synced, when external-dns's
// CRD is installed after the operator started: those waiting in DNSEndpointsNotServed are
// published then.
func (h *handler) wakeWhenServed(ctx context.Context) {
	if h.informer.HasSynced() || !cache.WaitForCacheSync(ctx.Done(), h.informer.HasSynced) {
		return
	}
	fips, err := h.fips.Cache().List("", labels.Everything())
	if err != nil {
		return
	}
	for _, f := range fips {
		h.fips.Enqueue(f.Namespace, f.Name)
	}
}

// onRange wakes the FloatingIPs holding the range's addresses when it changes: its spec.dns may.
func (h *handler) onRange(_ string, r *v1.FloatingIPRange) (*v1.FloatingIPRange, error) {
	if r == nil {
		return r, nil
	}
	fips, err := h.fips.Cache().List("", labels.Everything())
	if err != nil {
		return r, err
	}
	for _, f := range fips {
		if f.Status.Range == r.Name {
			h.fips.Enqueue(f.Namespace, f.Name)
		}
	}
	return r, nil
}

// verdict is what the FloatingIP shows of its name: nil shows nothing (no name is asked for).
type verdict struct {
	ok              bool
	reason, message string
	names           []string
}

// sync publishes, changes or takes away the FloatingIP's DNSEndpoint, and shows the outcome.
func (h *handler) sync(key string, f *v1.FloatingIP) (*v1.FloatingIP, error) {
	if f == nil {
		// Gone: its DNSEndpoint goes with it (the garbage collector follows its owner reference;
		// this covers a cluster without one).
		ns, name, _ := strings.Cut(key, "/")
		h.release(key)
		return nil, h.remove(ns, name)
	}
	if f.DeletionTimestamp != nil {
		h.release(key)
		return f, h.remove(f.Namespace, f.Name)
	}
	v, err := h.publish(key, f)
	if v == nil {
		h.release(key)
		if rmErr := h.remove(f.Namespace, f.Name); rmErr != nil {
			return f, rmErr
		}
	}
	shown, werr := h.show(f, v)
	return shown, errors.Join(err, werr)
}

// publish writes f's DNSEndpoint as its range asks, and says what f shows of it; nil when its
// range asks for no name or f holds no address. An error asks for a retry.
func (h *handler) publish(key string, f *v1.FloatingIP) (*verdict, error) {
	addr, err := netip.ParseAddr(f.Status.IPAddress)
	if err != nil || !v1.Allocated.IsTrue(f) {
		return nil, nil
	}
	r, err := h.ranges.Get(f.Status.Range)
	if err != nil || r.Spec.DNS == nil {
		return nil, nil
	}
	cluster := f.Annotations[v1.AnnotationClusterName]
	names, err := dnsname.Names(*r.Spec.DNS, cluster)
	if err != nil {
		h.release(key)
		return &verdict{reason: v1.ReasonDNSNameInvalid, message: fmt.Sprintf("FloatingIPRange %s gives no DNS name: %v", r.Name, err)},
			h.remove(f.Namespace, f.Name)
	}
	want := dnsname.Endpoints(names, addr, dnsname.TTL(*r.Spec.DNS))
	other, name, wake := h.claims.take(holder{key: key, cluster: f.Namespace, recordType: dnsname.RecordType(addr)}, names, h.published)
	h.wake(wake)
	if other != nil {
		return &verdict{reason: v1.ReasonDNSNameTaken, message: fmt.Sprintf(
				"%s is published for FloatingIP %s (guest cluster namespace %s) already; it is not overwritten", name, other.key, other.cluster)},
			h.remove(f.Namespace, f.Name)
	}
	if h.informer == nil {
		return &verdict{reason: v1.ReasonDNSNotEnabled, message: fmt.Sprintf(
			"the operator does not write DNSEndpoints (the chart's dns.enabled is false): %s is not published", strings.Join(names, ", "))}, nil
	}
	if !h.informer.HasSynced() {
		return &verdict{reason: v1.ReasonDNSEndpointsNotServed, message: fmt.Sprintf(
			"the local cluster serves no DNSEndpoints (%s): install external-dns's CRD; %s is published once it is there",
			dnsname.Resource.GroupVersion(), strings.Join(names, ", "))}, nil
	}
	current, err := h.current(f.Namespace, f.Name)
	if err != nil {
		return &verdict{reason: v1.ReasonDNSWriteFailed, message: err.Error()}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()
	var seen dnsname.Observed
	switch current {
	case nil:
		_, err = h.endpoints.Namespace(f.Namespace).Create(ctx, dnsname.New(f, want), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = fmt.Errorf("a DNSEndpoint %s/%s that is not the operator's is in the way: it is left alone", f.Namespace, f.Name)
		}
	default:
		seen, err = dnsname.Read(current)
		if err == nil && dnsname.Same(seen.Endpoints, want) && ownedBy(current, f) {
			break
		}
		updated := dnsname.New(f, want)
		updated.SetResourceVersion(current.GetResourceVersion())
		_, err = h.endpoints.Namespace(f.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
		seen = dnsname.Observed{} // a new generation, not taken in yet
		current = nil
	}
	if err != nil {
		msg := fmt.Sprintf("writing DNSEndpoint %s/%s: %s", f.Namespace, f.Name, redact.Shorten(err.Error(), redact.MaxValue))
		return &verdict{reason: v1.ReasonDNSWriteFailed, message: msg, names: names}, errors.New(msg)
	}
	if current == nil || seen.ObservedGeneration < seen.Generation {
		return &verdict{reason: v1.ReasonDNSPending, names: names, message: fmt.Sprintf(
			"DNSEndpoint %s/%s publishes %s as %s; external-dns has not taken in this version of it yet", f.Namespace, f.Name, strings.Join(names, ", "), addr)}, nil
	}
	return &verdict{ok: true, reason: v1.ReasonDNSPublished, names: names, message: fmt.Sprintf(
		"external-dns took in DNSEndpoint %s/%s (generation %d): %s as %s", f.Namespace, f.Name, seen.Generation, strings.Join(names, ", "), addr)}, nil
}

// release lets the names of the FloatingIP key go, and wakes those refused one of them.
func (h *handler) release(key string) { h.wake(h.claims.release(key)) }

// wake looks again at the FloatingIPs keys.
func (h *handler) wake(keys []string) {
	for _, k := range keys {
		if ns, name, ok := strings.Cut(k, "/"); ok {
			h.fips.Enqueue(ns, name)
		}
	}
}

// ownedBy says whether u names f as its owner.
func ownedBy(u *unstructured.Unstructured, f *v1.FloatingIP) bool {
	return slices.ContainsFunc(u.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.UID == f.UID })
}

// published is who publishes name now, by the operator's DNSEndpoints.
func (h *handler) published(name string) []holder {
	if h.informer == nil {
		return nil
	}
	objs, err := h.informer.GetIndexer().ByIndex(byNameIndex, name)
	if err != nil {
		return nil
	}
	var out []holder
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		seen, err := dnsname.Read(u)
		if err != nil {
			continue
		}
		for _, e := range seen.Endpoints {
			if e.DNSName == name {
				out = append(out, holder{key: u.GetNamespace() + "/" + u.GetName(), cluster: u.GetNamespace(), recordType: e.RecordType})
			}
		}
	}
	return out
}

// current is the operator's DNSEndpoint of the FloatingIP ns/name as the watch shows it, nil when
// there is none.
func (h *handler) current(ns, name string) (*unstructured.Unstructured, error) {
	obj, exists, err := h.informer.GetIndexer().GetByKey(ns + "/" + name)
	if err != nil || !exists {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	return u, nil
}

// remove deletes the operator's DNSEndpoint of the FloatingIP ns/name, if the watch shows one.
func (h *handler) remove(ns, name string) error {
	if h.informer == nil || !h.informer.HasSynced() {
		return nil
	}
	u, err := h.current(ns, name)
	if err != nil || u == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()
	uid := u.GetUID()
	err = h.endpoints.Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting DNSEndpoint %s/%s: %w", ns, name, err)
	}
	logrus.Infof("FloatingIP %s/%s: its DNSEndpoint was deleted", ns, name)
	return nil
}

// show writes v on f: the DNSPublished condition and status.dnsNames, or neither when v is nil.
// An Event tells a verdict that turned bad.
func (h *handler) show(f *v1.FloatingIP, v *verdict) (*v1.FloatingIP, error) {
	if _, shown := v1.GetCondition(f.Status.Conditions, v1.DNSPublished); v == nil && !shown && len(f.Status.DNSNames) == 0 {
		return f, nil
	}
	if v != nil && !v.ok && v.reason != v1.ReasonDNSPending && v1.SetCondition(f.Status.DeepCopy(), v1.DNSPublished, false, v.reason, v.message) {
		h.recorder.Event(f, v1.EventType(v.reason), v.reason, v.message)
	}
	return status.UpdateFloatingIP(h.fips, f, func(s *v1.FloatingIPStatus) {
		if v == nil {
			v1.RemoveCondition(s, v1.DNSPublished)
			s.DNSNames = nil
			return
		}
		v1.SetCondition(s, v1.DNSPublished, v.ok, v.reason, v.message)
		s.DNSNames = v.names
	})
}
