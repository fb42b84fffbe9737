// Package floatingip allocates each FloatingIP its address: the one in spec.ipaddress when set,
// else the lowest free address of its range, written back to spec.ipaddress. The address is held
// by the FloatingIPAllocation object the allocation manager creates for it. A change of address
// or range claims the new address before the old one is released; deleting a FloatingIP releases
// its address exactly once through a finalizer. Every outcome is a condition with a reason on the
// object and an Event.
package floatingip

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/rancher/wrangler/v2/pkg/condition"
	"github.com/rancher/wrangler/v2/pkg/genericcondition"
	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/controllers"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	mgmtcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io/v3"
	provcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io/v1"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
	"github.com/kubefip/kube-fip-operator/pkg/status"
)

// HandlerName names the handlers and so their finalizer: wrangler's OnRemove puts
// v1.FloatingIPFinalizer on every FloatingIP. It never changes.
const HandlerName = "kube-fip-floatingip"

type handler struct {
	ctx context.Context
	// fleet holds the provisioning clusters: the guest cluster of a FloatingIP discovery did not
	// make is the one its clustername annotation names there.
	fleet    string
	fips     kubefipcontrollers.FloatingIPController
	ranges   kubefipcontrollers.FloatingIPRangeCache
	clusters mgmtcontrollers.ClusterCache
	// prov are Rancher's provisioning clusters: a FloatingIP of one that is gone retains its
	// address for a cluster re-created under the same name.
	prov     provcontrollers.ClusterCache
	store    *config.Store
	alloc    *allocation.Manager
	metrics  *metrics.Metrics
	recorder record.EventRecorder
	// firstGuest adds to a FloatingIP's first address what Rancher already says of its guest.
	firstGuest *controllers.FirstGuestStatus
}

// Register registers the FloatingIP handlers.
func Register(ctx context.Context, c *controllers.Context) error {
	h := &handler{ctx: ctx, fleet: c.FleetNamespace, fips: c.FloatingIPs, ranges: c.Ranges.Cache(), clusters: c.ManagementClusters.Cache(), alloc: c.Alloc,
		metrics: c.Metrics, recorder: c.Recorder, store: c.Store, firstGuest: c.FirstGuest}
	if c.ProvisioningClusters != nil {
		h.prov = c.ProvisioningClusters.Cache()
	}
	// The remove handler first: it puts the finalizer on before the change handler claims an
	// address, so no FloatingIP ever holds an address without the finalizer that releases it.
	c.FloatingIPs.OnRemove(ctx, HandlerName, h.OnFloatingIPRemove)
	c.FloatingIPs.OnChange(ctx, HandlerName, h.OnFloatingIPChange)
	c.FloatingIPs.OnChange(ctx, ReadyMetricHandlerName, h.OnFloatingIPReadyMetric)
	// A management cluster arriving makes its namespace a guest cluster's: its FloatingIPs are
	// judged again.
	c.ManagementClusters.OnChange(ctx, HandlerName, h.OnManagementClusterChange)
	if c.ProvisioningClusters != nil {
		// A change of a provisioning cluster's labels may let a range's clusterSelector admit
		// its waiting FloatingIPs.
		if err := h.watchProvisioningClusters(c.ProvisioningClusters); err != nil {
			return fmt.Errorf("watching provisioning clusters: %w", err)
		}
	}
	return nil
}

// OnFloatingIPChange claims the FloatingIP's address and records the outcome. A failure that
// is not a refusal for a reason of the FloatingIP's own (an API failure, a range record too large
// to write) is shown on the object too, and retried with backoff.
func (h *handler) OnFloatingIPChange(_ string, f *v1.FloatingIP) (*v1.FloatingIP, error) {
	if f == nil || f.DeletionTimestamp != nil {
		return f, nil
	}
	if !slices.Contains(f.Finalizers, v1.FloatingIPFinalizer) {
		// Wrangler runs this handler even when the remove handler could not put the finalizer
		// on (a conflict with another writer): nothing is claimed or shown until it is there,
		// and the remove handler's error has queued the FloatingIP again.
		return f, nil
	}
	out, err := h.allocate(f)
	if errors.Is(err, allocation.ErrHolderUnknown) {
		// Another writer created the address's allocation a moment ago; its holder is known as
		// soon as the informer brings it, and the claim is judged then.
		h.fips.EnqueueAfter(f.Namespace, f.Name, time.Second)
		return f, nil
	}
	if err != nil {
		h.fail(f, err)
	}
	return out, err
}

func (h *handler) allocate(f *v1.FloatingIP) (*v1.FloatingIP, error) {
	out := shown{cluster: f.Annotations[v1.AnnotationClusterName], generation: f.Generation, addr: f.Status.IPAddress, rng: f.Status.Range}
	rangeName := f.Annotations[v1.AnnotationFloatingIPRange]

	var want netip.Addr
	if f.Spec.IPAddress != "" {
		addr, err := netip.ParseAddr(f.Spec.IPAddress)
		if err != nil {
			// The schema keeps this out; an object from before the schema may still carry it.
			return h.refuse(f, out, v1.ReasonInvalidAddress, fmt.Sprintf("spec.ipaddress %s is not an IP address", redact.Quote(f.Spec.IPAddress, redact.MaxValue)))
		}
		want = addr.Unmap()
	}
	if rangeName == "" {
		return h.refuse(f, out, v1.ReasonRangeNotSet, fmt.Sprintf("the %s annotation names no FloatingIPRange to allocate from", v1.AnnotationFloatingIPRange))
	}

	if msg, ok := h.namespaceAllowed(f, rangeName, want); !ok {
		return h.refuse(f, out, v1.ReasonNamespaceNotAllowed, msg)
	}

	soft := proposed(f, want)
	claimant := h.claimant(f)
	var addr netip.Addr
	var others []netip.Addr
	var err error
	// Refused for want of room (or by the range's selector or cap), a guest cluster's FloatingIP
	// moves on to the next range of its network in selection order, at most maxMoves times a pass.
	refusedWhy := ""
	for moves := 0; ; moves++ {
		addr, others, err = h.alloc.Claim(h.ctx, rangeName, claimant, want, soft)
		if err == nil || moves == maxMoves {
			break
		}
		next, why, ok := h.nextRange(f, rangeName, claimant, want, err)
		if !ok {
			refusedWhy = why
			break
		}
		updated, merr := h.move(f, next, why)
		if merr != nil {
			return f, merr
		}
		f, rangeName = updated, next
	}
	if err != nil {
		reason, msg, retry := explain(err, rangeName, want)
		if reason == "" {
			return f, err
		}
		if refusedWhy != "" {
			msg += "; no range of its network in selection order has room for the cluster: " + refusedWhy
		}
		if reason == v1.ReasonIPConflict && !conditionIs(f.Status.Conditions, v1.Allocated, reason, msg) {
			h.metrics.AllocationConflicts.WithLabelValues(rangeName).Inc()
		}
		updated, uerr := h.refuse(f, out, reason, msg)
		if uerr != nil {
			return updated, uerr
		}
		return updated, retry
	}

	if addr != want {
		// As the original operator did: an automatically allocated address is written to the spec
		// (one discovery proposed is there already, unless another owner took it meanwhile).
		// This write, guarded by the FloatingIP's resourceVersion, is what decides between two
		// replicas that each claimed an address for it: the loser meets a conflict, and its next
		// pass asks for the winner's address and lets go of its own.
		f = f.DeepCopy()
		f.Spec.IPAddress = addr.String()
		updated, err := h.fips.Update(f)
		if err != nil {
			return f, err
		}
		f = updated
		out.generation = f.Generation
	}

	msg := fmt.Sprintf("holds %s in FloatingIPRange %s", addr, rangeName)
	if why := f.Annotations[v1.AnnotationRangeSelection]; why != "" {
		// Why it moved here, written with the move: said on every pass.
		msg += ", " + redact.Shorten(why, redact.MaxValue)
	}
	if out.addr != addr.String() || out.rng != rangeName {
		h.recorder.Event(f, v1.EventType(v1.ReasonAllocated), v1.ReasonAllocated, msg)
	}
	oldRange := out.rng
	out.addr, out.rng = addr.String(), rangeName
	out.allocated, out.reason, out.msg = true, v1.ReasonAllocated, msg
	updated, err := h.show(f, out)
	if err != nil {
		return updated, err
	}

	// The FloatingIP shows its new address: only now let go of anything held before — the old
	// address after a change, one in the old range after a move, or another replica's extra claim,
	// in this range or in one it moved away from. The object is read afresh first: a cache that
	// lags a change made meanwhile must not release the address the change asked for.
	var elsewhere []string
	if oldRange != "" && oldRange != rangeName {
		elsewhere = append(elsewhere, oldRange) // its legacy record entries too
	}
	for _, r := range h.alloc.RangesHeldBy(string(f.UID)) {
		if r != rangeName && !slices.Contains(elsewhere, r) {
			elsewhere = append(elsewhere, r)
		}
	}
	if len(elsewhere) == 0 && len(others) == 0 {
		return updated, nil
	}
	live, err := h.fips.Get(f.Namespace, f.Name, metav1.GetOptions{})
	if err != nil {
		return updated, err
	}
	if spec, err := netip.ParseAddr(live.Spec.IPAddress); err != nil || spec.Unmap() != addr ||
		live.UID != f.UID || live.Status.IPAddress != addr.String() || live.Status.Range != rangeName {
		h.fips.Enqueue(f.Namespace, f.Name)
		return updated, nil
	}
	for _, r := range elsewhere {
		if err := h.giveUp(f, r); err != nil {
			return updated, err
		}
	}
	if len(others) > 0 {
		if err := h.giveUp(f, rangeName, others...); err != nil {
			return updated, err
		}
	}
	return updated, nil
}

// shown is what this handler shows in a FloatingIP's status: the fields it owns. The guest
// controller owns the others.
type shown struct {
	cluster    string
	generation int64
	addr, rng  string
	allocated  bool
	reason     string
	msg        string
}

// show writes out into f's status.
func (h *handler) show(f *v1.FloatingIP, out shown) (*v1.FloatingIP, error) {
	var guest *controllers.GuestEvent
	updated, err := status.UpdateFloatingIP(h.fips, f, func(s *v1.FloatingIPStatus) {
		s.ClusterName, s.ObservedGeneration = out.cluster, out.generation
		s.IPAddress, s.Range = out.addr, out.rng
		v1.SetCondition(s, v1.Allocated, out.allocated, out.reason, out.msg)
		guest = nil
		if out.allocated {
			// The first address comes with what Rancher already says of the guest.
			guest = h.firstGuest.Apply(f, s)
		}
	})
	if err == nil && guest != nil {
		h.recorder.Event(updated, guest.Type, guest.Reason, guest.Message)
	}
	return updated, err
}

// proposed tells whether want, f's spec.ipaddress, is discovery's proposal rather than a person's
// request: discovery created f with it, and f has never shown an address. Another owner may have
// taken a proposal meanwhile; f then gets the lowest free address instead of an IPConflict.
func proposed(f *v1.FloatingIP, want netip.Addr) bool {
	return want.IsValid() && f.Status.IPAddress == "" && f.Status.Range == "" &&
		f.Annotations[v1.AnnotationProposedAddress] == f.Spec.IPAddress
}

// refuse records that the FloatingIP does not get the address it asks for, with an Event when
// that is news: Normal while it waits for something that comes by itself, Warning otherwise.
// What it still holds, if anything, stays held and shown.
func (h *handler) refuse(f *v1.FloatingIP, out shown, reason, msg string) (*v1.FloatingIP, error) {
	if !conditionIs(f.Status.Conditions, v1.Allocated, reason, msg) {
		h.recorder.Event(f, v1.EventType(reason), reason, msg)
	}
	if out.rng != "" {
		held := h.alloc.HeldBy(out.rng, string(f.UID))
		if len(held) == 0 {
			out.addr, out.rng = "", ""
		} else {
			out.addr = held[0].String()
			msg += fmt.Sprintf("; it keeps %s meanwhile", held[0])
		}
	}
	out.allocated, out.reason, out.msg = false, reason, msg
	return h.show(f, out)
}

// OnFloatingIPRemove releases the FloatingIP's addresses; the finalizer stays until that worked.
// The FloatingIP discovery made for a provisioning cluster that is gone retains them instead, for
// addressRetention, for a cluster re-created under the same name — whoever deleted it: discovery,
// or the namespace's deletion while the operator was down. Those its running guest may still
// serve are kept while it does (giveUp).
func (h *handler) OnFloatingIPRemove(_ string, f *v1.FloatingIP) (*v1.FloatingIP, error) {
	if cluster, ok := v1.ProvisioningClusterOf(f); ok && h.clusterGone(cluster, f.Namespace) {
		if retention := h.store.Get().AddressRetention; retention > 0 {
			kept, err := h.alloc.Retain(h.ctx, string(f.UID), cluster, time.Now().Add(retention))
			if err != nil {
				return f, err
			}
			for _, a := range kept {
				msg := fmt.Sprintf("%s is retained for a cluster re-created as %s/%s for %s", a, cluster.Namespace, cluster.Name, retention)
				logrus.Infof("FloatingIP %s/%s: %s", f.Namespace, f.Name, msg)
				h.recorder.Event(f, v1.EventType(v1.ReasonRetained), v1.ReasonRetained, msg)
			}
		}
	}
	for _, name := range rangesOf(f) {
		if err := h.giveUp(f, name); err != nil {
			return f, err
		}
	}
	return f, nil
}

// release lets go of f's addresses in range name (all of them when addrs is empty).
func (h *handler) release(f *v1.FloatingIP, name string, addrs ...netip.Addr) ([]netip.Addr, error) {
	released, err := h.alloc.Release(h.ctx, name, string(f.UID), addrs...)
	if err != nil {
		return nil, err
	}
	for _, a := range released {
		msg := fmt.Sprintf("released %s in FloatingIPRange %s", a, name)
		h.recorder.Event(f, v1.EventType(v1.ReasonReleased), v1.ReasonReleased, msg)
	}
	return released, nil
}

// clusterGone tells whether the provisioning cluster a FloatingIP of namespace was made for is
// gone: deleted, being deleted, or re-created for another namespace already.
func (h *handler) clusterGone(cluster v1.ClusterReference, namespace string) bool {
	if h.prov == nil {
		return false
	}
	c, err := h.prov.Get(cluster.Namespace, cluster.Name)
	switch {
	case apierrors.IsNotFound(err):
		return true
	case err != nil:
		return false
	}
	return c.DeletionTimestamp != nil || c.Status.ClusterName != namespace
}

// rangesOf names every range f may hold an address in: the one it asks for and the one its status
// says it holds in.
func rangesOf(f *v1.FloatingIP) []string {
	named := []string{f.Annotations[v1.AnnotationFloatingIPRange], f.Status.Range}
	return slices.Compact(slices.DeleteFunc(named, func(r string) bool { return r == "" }))
}

func conditionIs(conds []genericcondition.GenericCondition, typ condition.Cond, reason, msg string) bool {
	c, ok := v1.GetCondition(conds, typ)
	return ok && c.Reason == reason && c.Message == msg
}
