// Package floatingiprange keeps each FloatingIPRange's status current — counts, the Ready condition
// with a reason when the range is invalid, overlaps an older range, no longer covers allocated
// addresses or names a Harvester cluster Rancher does not know — protects a range that still has allocations from deletion, wakes the FloatingIPs
// waiting for one of its addresses, and exports the range metrics.
package floatingiprange

import (
	"context"
	"fmt"
	"math/big"
	"sync"
	"time"

	"github.com/rancher/wrangler/v2/pkg/generic"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/controllers"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvesterview"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
	"github.com/kubefip/kube-fip-operator/pkg/status"
)

// HandlerName names the handlers and so their finalizer: wrangler's OnRemove puts
// v1.RangeFinalizer on every range. It never changes.
const HandlerName = "kube-fip-floatingiprange"

// WaitingByRangeIndex indexes the FloatingIPs waiting for an address by the range their fiprange
// annotation names: those refused an address there, or holding theirs in another range. A new
// FloatingIP, not judged yet, is in the queue already and not indexed.
const WaitingByRangeIndex = "kubefip.k8s.binbash.org/waiting-floatingip-by-range"

// BySpaceIndex indexes FloatingIPRanges by the hash of their address space: the ranges of one
// Harvester cluster's VM network, among which a guest cluster's FloatingIP moves.
const BySpaceIndex = "kubefip.k8s.binbash.org/range-by-space"

type handler struct {
	ctx      context.Context
	ranges   kubefipcontrollers.FloatingIPRangeController
	fips     kubefipcontrollers.FloatingIPController
	alloc    *allocation.Manager
	metrics  *metrics.Metrics
	recorder record.EventRecorder
	// selectors judges the ranges' clusterSelectors against Rancher's provisioning clusters.
	selectors *selectors
	// harvesters judges the ranges' harvesterClusterName against Rancher's management clusters.
	harvesters *harvesters
	// views are the Harvester clusters the ranges name, as last read; nil when none is read.
	views *harvesterview.Views

	mu sync.Mutex
	// labels are the metric labels each range was last exported with, so that a change of CIDR or
	// annotations replaces the old series instead of leaving it behind.
	labels map[string]metrics.RangeLabels
	// due is when each range's pass, asked for by a change of its allocations, is due: changes
	// before then are taken in by that same pass.
	due map[string]time.Time
	// written is when each range's status was last written, so that a change of its counts alone
	// waits for StatusInterval to pass: the write's own update event would otherwise run the next
	// pass, and write again, at once.
	written map[string]time.Time
}

// StatusInterval batches a range's status writes: however many addresses are claimed or
// released, the counts are written at most about once per interval.
const StatusInterval = time.Second

// Register registers the range handlers and the index the FloatingIP side relies on.
func Register(ctx context.Context, c *controllers.Context) error {
	h := &handler{ctx: ctx, ranges: c.Ranges, fips: c.FloatingIPs, alloc: c.Alloc, metrics: c.Metrics, recorder: c.Recorder,
		labels: map[string]metrics.RangeLabels{}, due: map[string]time.Time{}, written: map[string]time.Time{},
		selectors: &selectors{clusters: c.ProvisioningClusters, fleet: c.FleetNamespace}}
	c.FloatingIPs.Cache().AddIndexer(WaitingByRangeIndex, func(f *v1.FloatingIP) ([]string, error) {
		if name := f.Annotations[v1.AnnotationFloatingIPRange]; name != "" && waiting(f, name) {
			return []string{name}, nil
		}
		return nil, nil
	})
	c.Ranges.Cache().AddIndexer(BySpaceIndex, func(r *v1.FloatingIPRange) ([]string, error) {
		return []string{v1.SpaceOf(r).Hash()}, nil
	})
	if c.ManagementClusters != nil {
		if err := h.watchManagementClusters(c.ManagementClusters); err != nil {
			return fmt.Errorf("watching management clusters: %w", err)
		}
	}
	if err := h.readHarvesters(c); err != nil {
		return err
	}
	c.Alloc.OnRangeChanged(h.allocationsChanged)
	c.Ranges.OnRemove(ctx, HandlerName, h.OnRangeRemove)
	c.Ranges.OnChange(ctx, HandlerName, h.OnRangeChange)
	if c.ProvisioningClusters != nil {
		if err := h.watchProvisioningClusters(c.ProvisioningClusters); err != nil {
			return fmt.Errorf("watching provisioning clusters: %w", err)
		}
	}
	return nil
}

// allocationsChanged asks for one pass of the range within StatusInterval, however many changes
// come meanwhile. It is called with the allocation index locked: it only schedules.
func (h *handler) allocationsChanged(name string) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if now.Before(h.due[name]) {
		return
	}
	h.due[name] = now.Add(StatusInterval)
	h.ranges.EnqueueAfter(name, StatusInterval)
}

// passStarts marks that a pass of range name reads its allocations now, so a change from here on
// asks for a pass of its own. The queue keeps one entry per range, at the earliest time asked
// for: the pass asked for at due may be the one that runs now, earlier, for another reason.
func (h *handler) passStarts(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.due, name)
}

// OnRangeChange brings the range's status and metrics up to date.
func (h *handler) OnRangeChange(_ string, r *v1.FloatingIPRange) (*v1.FloatingIPRange, error) {
	if r == nil || r.DeletionTimestamp != nil {
		return r, nil
	}
	h.passStarts(r.Name)
	// Whatever changed in the range — an address freed, the range created or edited — the
	// FloatingIPs waiting for an address of its network try again: those of the range, and those
	// of the other ranges of its space, which may move here.
	h.wakeWaiters(r)
	// What Harvester hands out on the range's segment is withheld before the pool is counted.
	wire, onSegment := h.onTheWire(r)
	sum := h.alloc.Summarize(r)
	if p := h.selectors.noneSelected(r); p != nil {
		sum.Warnings = append(sum.Warnings, *p)
	}
	sum.Warnings = append(sum.Warnings, wire.Warnings...)
	// What keeps the range from handing out addresses comes first; then whether any guest
	// cluster can be given them.
	notReady := sum.Problem
	if notReady == nil {
		notReady = onSegment
	}
	if notReady == nil {
		notReady = h.harvesters.unknown(r)
	}
	if h.views != nil {
		h.showInUse(r, wire)
	}
	v := verdict{sum: sum, problem: notReady, generation: r.Generation, selector: allocation.ClusterSelectorOf(r).String()}
	want := r.Status.DeepCopy()
	readyChanged, warningChanged := v.apply(want)
	specChanged := r.Status.ObservedGeneration != r.Generation

	switch {
	case !readyChanged:
	case notReady != nil:
		h.recorder.Event(r, v1.EventType(notReady.Reason), notReady.Reason, notReady.Message)
	case r.Status.ObservedGeneration != 0:
		msg := fmt.Sprintf("%s: %s of %s addresses free", r.Spec.IPRange, want.Available, want.Capacity)
		h.recorder.Event(r, v1.EventType(v1.ReasonReady), v1.ReasonReady, msg)
	}
	if warningChanged {
		reason, msg := warningOf(sum.Warnings)
		h.recorder.Event(r, v1.EventType(reason), reason, msg)
	}
	h.setMetrics(r, sum)

	if specChanged {
		// Overlap is judged against the other ranges: let them look again.
		h.enqueueOtherRanges(r.Name)
	}
	if equality.Semantic.DeepEqual(&r.Status, want) {
		return r, nil
	}
	if countsOnly(&r.Status, want) {
		if wait := h.sinceWritten(r.Name); wait > 0 {
			h.ranges.EnqueueAfter(r.Name, wait)
			return r, nil
		}
	}
	updated, err := status.UpdateRange(h.ranges, r, func(s *v1.FloatingIPRangeStatus) { v.apply(s) })
	if err != nil {
		h.statusFailed(r, err)
		return updated, err
	}
	h.mu.Lock()
	h.written[r.Name] = time.Now()
	h.mu.Unlock()
	return updated, nil
}

// sinceWritten is how long a change of range name's counts alone still waits: what is left of
// StatusInterval since its status was last written.
func (h *handler) sinceWritten(name string) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return time.Until(h.written[name].Add(StatusInterval))
}

// statusFailed shows on the range that its status could not be written: a Warning Event, and
// Ready=False on the status as stored, which is written as it was and so fits where the new one
// did not. A conflict or a vanished range is the ordinary race of a cache and is only retried.
func (h *handler) statusFailed(r *v1.FloatingIPRange, err error) {
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return
	}
	h.showNotReady(r, v1.ReasonStatusUpdateFailed, "writing the status failed and is retried: "+redact.Shorten(err.Error(), redact.MaxValue))
}

// showNotReady shows Ready=False with reason and msg on r, and a Warning Event, when that is news.
// It returns the range as written, or r when nothing was.
func (h *handler) showNotReady(r *v1.FloatingIPRange, reason, msg string) *v1.FloatingIPRange {
	if !v1.SetCondition(r.Status.DeepCopy(), v1.Ready, false, reason, msg) {
		return r
	}
	h.recorder.Event(r, v1.EventType(reason), reason, msg)
	updated, err := status.UpdateRange(h.ranges, r, func(s *v1.FloatingIPRangeStatus) {
		v1.SetCondition(s, v1.Ready, false, reason, msg)
	})
	if err != nil {
		logrus.Debugf("FloatingIPRange %s: showing %s: %v", r.Name, reason, err)
		return r
	}
	return updated
}

func (h *handler) setMetrics(r *v1.FloatingIPRange, sum allocation.Summary) {
	l := metrics.RangeLabels{
		Name:             r.Name,
		CIDR:             redact.Shorten(r.Spec.IPRange, redact.MaxValue),
		HarvesterCluster: redact.Shorten(r.Annotations[v1.AnnotationHarvesterClusterName], redact.MaxValue),
		HarvesterNetwork: redact.Shorten(r.Annotations[v1.AnnotationHarvesterNetworkName], redact.MaxValue),
	}
	h.mu.Lock()
	if old, ok := h.labels[r.Name]; ok && old != l {
		h.metrics.DeleteRange(r.Name)
	}
	h.labels[r.Name] = l
	h.mu.Unlock()
	capacity, _ := new(big.Float).SetInt(sum.Capacity).Float64()
	available, _ := new(big.Float).SetInt(sum.Available).Float64()
	h.metrics.SetRange(l, capacity, float64(sum.Used), float64(sum.Retained), available)
}

// OnRangeRemove keeps the finalizer while addresses are still allocated, saying so on the range.
func (h *handler) OnRangeRemove(_ string, r *v1.FloatingIPRange) (*v1.FloatingIPRange, error) {
	h.passStarts(r.Name)
	if holders := h.alloc.Holders(r); len(holders) > 0 {
		msg := fmt.Sprintf("deletion waits until its %d allocated addresses are released: %s", len(holders), allocation.DescribeHolders(holders))
		// Keep the finalizer without an error: every release runs this handler again.
		return h.showNotReady(r, v1.ReasonDeletionBlocked, msg), generic.ErrSkip
	}
	h.mu.Lock()
	delete(h.labels, r.Name)
	delete(h.due, r.Name)
	delete(h.written, r.Name)
	h.mu.Unlock()
	h.metrics.DeleteRange(r.Name)
	h.enqueueOtherRanges(r.Name)
	logrus.Infof("FloatingIPRange %s deleted", r.Name)
	return r, nil
}

// wakeWaiters enqueues the FloatingIPs waiting for an address of r's space: those of r and of the
// other ranges of its Harvester cluster's VM network. Only waiting FloatingIPs are indexed, so a
// pass costs the waiters, not every FloatingIP of the space.
func (h *handler) wakeWaiters(r *v1.FloatingIPRange) {
	names := []string{r.Name}
	if siblings, err := h.ranges.Cache().GetByIndex(BySpaceIndex, v1.SpaceOf(r).Hash()); err == nil {
		for _, o := range siblings {
			if o.Name != r.Name {
				names = append(names, o.Name)
			}
		}
	}
	for _, name := range names {
		fips, err := h.fips.Cache().GetByIndex(WaitingByRangeIndex, name)
		if err != nil {
			continue
		}
		for _, f := range fips {
			if f.DeletionTimestamp == nil {
				h.fips.Enqueue(f.Namespace, f.Name)
			}
		}
	}
}

// waiting tells whether f waits for an address of range name: judged, and refused an address
// there or holding one in another range.
func waiting(f *v1.FloatingIP, name string) bool {
	c, judged := v1.GetCondition(f.Status.Conditions, v1.Allocated)
	return judged && (c.Status != corev1.ConditionTrue || f.Status.Range != name)
}

// enqueueRanges queues the ranges that match.
func (h *handler) enqueueRanges(match func(*v1.FloatingIPRange) bool) {
	all, err := h.ranges.Cache().List(labels.Everything())
	if err != nil {
		return
	}
	for _, r := range all {
		if match(r) {
			h.ranges.Enqueue(r.Name)
		}
	}
}

// enqueueOtherRanges queues every range but name.
func (h *handler) enqueueOtherRanges(name string) {
	h.enqueueRanges(func(r *v1.FloatingIPRange) bool { return r.Name != name })
}
