// Package floatingiprange keeps each FloatingIPRange's status current — counts, the Ready condition
// with a reason when the range is invalid, overlaps an older range or no longer covers allocated
// addresses — protects a range that still has allocations from deletion, wakes the FloatingIPs
// waiting for one of its addresses, and exports the range metrics.
package floatingiprange

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/rancher/wrangler/v2/pkg/generic"
	"github.com/rancher/wrangler/v2/pkg/genericcondition"
	"github.com/rancher/wrangler/v2/pkg/relatedresource"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/conditions"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
)

// HandlerName names the handlers and so the finalizer wrangler.cattle.io/kube-fip-floatingiprange;
// it never changes.
const HandlerName = "kube-fip-floatingiprange"

// ByRangeIndex indexes FloatingIPs by the range their fiprange annotation names.
const ByRangeIndex = "kubefip.k8s.binbash.org/floatingip-by-range"

// Condition reasons of a range.
const (
	ReasonReady           = "Ready"
	ReasonDeletionBlocked = "DeletionBlocked"
	// ReasonRecordNormalized: allocation keys written in another spelling than the record's
	// ("FD00::5", "::ffff:10.0.0.1") were rewritten; the Event names them.
	ReasonRecordNormalized = "RecordNormalized"
	// ReasonStatusUpdateFailed: the range's status could not be written (too large, rejected, the
	// API server failing); it is retried.
	ReasonStatusUpdateFailed = "StatusUpdateFailed"
)

type handler struct {
	ctx      context.Context
	ranges   kubefipcontrollers.FloatingIPRangeController
	fips     kubefipcontrollers.FloatingIPController
	alloc    *allocation.Manager
	metrics  *metrics.Metrics
	recorder record.EventRecorder

	mu sync.Mutex
	// labels are the metric labels each range was last exported with, so that a change of CIDR or
	// annotations replaces the old series instead of leaving it behind.
	labels map[string]metrics.RangeLabels
}

// Register registers the range handlers and the index the FloatingIP side relies on.
func Register(ctx context.Context, ranges kubefipcontrollers.FloatingIPRangeController, fips kubefipcontrollers.FloatingIPController,
	alloc *allocation.Manager, m *metrics.Metrics, recorder record.EventRecorder) {
	h := &handler{ctx: ctx, ranges: ranges, fips: fips, alloc: alloc, metrics: m, recorder: recorder, labels: map[string]metrics.RangeLabels{}}
	fips.Cache().AddIndexer(ByRangeIndex, func(f *v1.FloatingIP) ([]string, error) {
		if name := f.Annotations[v1.AnnotationFloatingIPRange]; name != "" {
			return []string{name}, nil
		}
		return nil, nil
	})
	alloc.OnNormalized(h.normalized)
	ranges.OnRemove(ctx, HandlerName, h.OnRangeRemove)
	ranges.OnChange(ctx, HandlerName, h.OnRangeChange)
	relatedresource.Watch(ctx, HandlerName+"-waiters", h.waiters, fips, ranges)
}

// OnRangeChange brings the range's status and metrics up to date.
func (h *handler) OnRangeChange(_ string, r *v1.FloatingIPRange) (*v1.FloatingIPRange, error) {
	if r == nil || r.DeletionTimestamp != nil {
		return r, nil
	}
	rewritten, err := h.alloc.Normalize(h.ctx, r.Name)
	if err != nil {
		h.statusFailed(r, err)
		return r, err
	}
	if len(rewritten) > 0 {
		// The write brings the range back with the record rewritten.
		return r, nil
	}
	sum := h.alloc.Summarize(r)
	status := r.Status.DeepCopy()
	status.Capacity = sum.Capacity.String()
	status.Used = int64(sum.Used)
	status.Available = sum.Available.String()
	specChanged := status.ObservedGeneration != r.Generation
	status.ObservedGeneration = r.Generation

	if sum.Problem != nil {
		if conditions.False(&status.Conditions, v1.Ready, sum.Problem.Reason, sum.Problem.Message) {
			h.recorder.Event(r, corev1.EventTypeWarning, sum.Problem.Reason, sum.Problem.Message)
			logrus.Warnf("FloatingIPRange %s: %s", r.Name, sum.Problem.Message)
		}
	} else {
		msg := fmt.Sprintf("%s: %s of %s addresses free", r.Spec.IPRange, status.Available, status.Capacity)
		if conditions.True(&status.Conditions, v1.Ready, ReasonReady, "") && r.Status.ObservedGeneration != 0 {
			h.recorder.Event(r, corev1.EventTypeNormal, ReasonReady, msg)
		}
	}

	h.setWarning(r, status, sum.Warnings)
	h.setMetrics(r, sum)

	if specChanged {
		// Overlap is judged against the other ranges: let them look again.
		h.enqueueOtherRanges(r.Name)
	}
	if equality.Semantic.DeepEqual(&r.Status, status) {
		return r, nil
	}
	next := r.DeepCopy()
	next.Status = *status
	updated, err := h.ranges.UpdateStatus(next)
	if err != nil {
		h.statusFailed(r, err)
	}
	return updated, err
}

// setWarning shows the range's warnings in its Warning condition, with a Warning Event when they
// change, and drops the condition when there is nothing to say.
func (h *handler) setWarning(r *v1.FloatingIPRange, status *v1.FloatingIPRangeStatus, warnings []allocation.Problem) {
	if len(warnings) == 0 {
		status.Conditions = slices.DeleteFunc(status.Conditions, func(c genericcondition.GenericCondition) bool { return c.Type == v1.Warning })
		return
	}
	msgs := make([]string, 0, len(warnings))
	for _, w := range warnings {
		msgs = append(msgs, w.Message)
	}
	msg := strings.Join(msgs, "; ")
	if conditions.True(&status.Conditions, v1.Warning, warnings[0].Reason, msg) {
		h.recorder.Event(r, corev1.EventTypeWarning, warnings[0].Reason, msg)
	}
}

// statusFailed shows on the range that its status could not be written: a Warning Event, and
// Ready=False on the status as stored, which is written as it was and so fits where the new one
// did not. A conflict or a vanished range is the ordinary race of a cache and is only retried.
func (h *handler) statusFailed(r *v1.FloatingIPRange, err error) {
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return
	}
	msg := fmt.Sprintf("writing the status failed and is retried: %s", ipam.Clip(err.Error()))
	stored := r.DeepCopy()
	if !conditions.False(&stored.Status.Conditions, v1.Ready, ReasonStatusUpdateFailed, msg) {
		return
	}
	h.recorder.Event(r, corev1.EventTypeWarning, ReasonStatusUpdateFailed, msg)
	if _, werr := h.ranges.UpdateStatus(stored); werr != nil {
		logrus.Debugf("FloatingIPRange %s: showing %s: %v", r.Name, ReasonStatusUpdateFailed, werr)
	}
}

// normalized says on the range which record keys were rewritten in canonical spelling, by
// whichever write did it.
func (h *handler) normalized(r *v1.FloatingIPRange, keys []string) {
	h.recorder.Event(r, corev1.EventTypeWarning, ReasonRecordNormalized, fmt.Sprintf(
		"status.allocations keys %s named addresses in another spelling than the record uses and were rewritten", quoteList(keys)))
}

// quoteList quotes up to ten values, each shortened, for a message.
func quoteList(values []string) string {
	parts := make([]string, 0, len(values))
	for i, v := range values {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(values)-10))
			break
		}
		parts = append(parts, ipam.Quote(v))
	}
	return strings.Join(parts, ", ")
}

func (h *handler) setMetrics(r *v1.FloatingIPRange, sum allocation.Summary) {
	l := metrics.RangeLabels{
		Name:             r.Name,
		CIDR:             ipam.Clip(r.Spec.IPRange),
		HarvesterCluster: ipam.Clip(r.Annotations[v1.AnnotationHarvesterClusterName]),
		HarvesterNetwork: ipam.Clip(r.Annotations[v1.AnnotationHarvesterNetworkName]),
	}
	h.mu.Lock()
	if old, ok := h.labels[r.Name]; ok && old != l {
		h.metrics.DeleteRange(r.Name)
	}
	h.labels[r.Name] = l
	h.mu.Unlock()
	capacity, _ := new(big.Float).SetInt(sum.Capacity).Float64()
	available, _ := new(big.Float).SetInt(sum.Available).Float64()
	h.metrics.SetRange(l, capacity, float64(sum.Used), available)
}

// OnRangeRemove keeps the finalizer while addresses are still allocated, saying so on the range.
func (h *handler) OnRangeRemove(_ string, r *v1.FloatingIPRange) (*v1.FloatingIPRange, error) {
	if n := len(r.Status.Allocations); n > 0 {
		msg := fmt.Sprintf("deletion waits until its %d allocated addresses are released: %s", n, holders(r))
		status := r.Status.DeepCopy()
		if conditions.False(&status.Conditions, v1.Ready, ReasonDeletionBlocked, msg) {
			h.recorder.Event(r, corev1.EventTypeWarning, ReasonDeletionBlocked, msg)
			r = r.DeepCopy()
			r.Status = *status
			if updated, err := h.ranges.UpdateStatus(r); err == nil {
				r = updated
			}
		}
		// Keep the finalizer without an error: every release rewrites the range's status, which
		// runs this handler again.
		return r, generic.ErrSkip
	}
	h.alloc.Forget(r.Name)
	h.mu.Lock()
	delete(h.labels, r.Name)
	h.mu.Unlock()
	h.metrics.DeleteRange(r.Name)
	h.enqueueOtherRanges(r.Name)
	logrus.Infof("FloatingIPRange %s deleted", r.Name)
	return r, nil
}

// waiters resolves a range to the FloatingIPs of that range not yet holding their address, so that
// they retry as soon as something changes in the range (an address freed, the range created).
func (h *handler) waiters(_, name string, _ runtime.Object) ([]relatedresource.Key, error) {
	fips, err := h.fips.Cache().GetByIndex(ByRangeIndex, name)
	if err != nil {
		return nil, err
	}
	var keys []relatedresource.Key
	for _, f := range fips {
		if f.DeletionTimestamp == nil && (!conditions.IsTrue(f.Status.Conditions, v1.Allocated) || f.Status.Range != name) {
			keys = append(keys, relatedresource.NewKey(f.Namespace, f.Name))
		}
	}
	return keys, nil
}

func (h *handler) enqueueOtherRanges(name string) {
	all, err := h.ranges.Cache().List(labels.Everything())
	if err != nil {
		return
	}
	for _, o := range all {
		if o.Name != name {
			h.ranges.Enqueue(o.Name)
		}
	}
}

// holders names up to ten holders of r's addresses.
func holders(r *v1.FloatingIPRange) string {
	keys := make([]string, 0, len(r.Status.Allocations))
	for k := range r.Status.Allocations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for i, k := range keys {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(keys)-10))
			break
		}
		a := r.Status.Allocations[k]
		parts = append(parts, fmt.Sprintf("%s (%s/%s)", ipam.Clip(k), ipam.Clip(a.Namespace), ipam.Clip(a.Name)))
	}
	return strings.Join(parts, ", ")
}
