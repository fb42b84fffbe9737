// Package guestcluster runs the guest operations of every guest cluster that has a FloatingIP:
// through Rancher's cluster proxy it checks the guest cluster, disables the Harvester cloud
// provider's kube-vip, installs kube-vip and kube-vip-cloud-provider when wanted, and writes the
// address into the ConfigMap the installed kube-vip-cloud-provider reads. A pass runs when the
// FloatingIP gets or changes its address, when the cluster connects or its labels change, when its
// kubeconfig rotates, when the configuration changes, and every operateGuestClusterInterval. Passes
// run on a work queue of their own, keyed by cluster so that one cluster gets one pass at a time,
// with a bounded number of workers, so a slow guest never holds up allocation or the other guests;
// while the allocator works through a backlog of FloatingIPs, the passes wait (allocfirst.go).
package guestcluster

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/controllers"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	mgmtcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io/v3"
	provcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io/v1"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/guestwatch"
	"github.com/kubefip/kube-fip-operator/pkg/harvesterview"
	"github.com/kubefip/kube-fip-operator/pkg/helminstall"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/pkg/sharedread"
)

// HandlerName names the handlers that feed the guest queue; it never changes.
const HandlerName = "kube-fip-guest"

// options tune the guest operations; see controllers.GuestOptions.
type options struct {
	controllers.GuestOptions
	// FleetNamespace holds the provisioning clusters and their kubeconfig Secrets.
	FleetNamespace string
	// Namespace is the operator's namespace, which holds ChartCredentialsSecret.
	Namespace string
}

// deps are the clients and caches the guest operations read and write.
type deps struct {
	FloatingIPs  kubefipcontrollers.FloatingIPController
	Ranges       kubefipcontrollers.FloatingIPRangeCache
	Alloc        heldAddresses
	Provisioning provcontrollers.ClusterController
	Management   mgmtcontrollers.ClusterController
	// Secrets reads the one kubeconfig Secret a pass needs, with a GET by name, at every pass: a
	// kubeconfig Rancher rotated is read at the next pass, and a pass whose token the guest refuses
	// (401) reads it once more.
	Secrets typedcorev1.SecretsGetter
	// Settings reads Rancher's address settings, which every guest kubeconfig's server must name.
	Settings guest.SettingsGetter
	Store    *config.Store
	Metrics  *metrics.Metrics
	Recorder record.EventRecorder
	// Harvesters are the Harvester clusters as last read, which tell the NIC kube-vip announces
	// on; nil when none is read.
	Harvesters *harvesterview.Views
}

// controller is the guest queue and its workers.
type controller struct {
	deps
	opts options
	// connect reaches a guest cluster with its kubeconfig.
	connect func(pass context.Context, t guest.Target) (guestAPI, error)
	// watches watch what serves each guest's addresses; nil in the handler's unit tests.
	watches *guestwatch.Set
	// queue holds the clusters whose pass is due by the name of their management cluster, which is
	// their FloatingIPs' namespace: each at most once, handed to one worker at a time.
	queue workqueue.TypedDelayingInterface[string]
	// next holds each cluster's coming pass: a retry with backoff, or the periodic one.
	next *nextPasses
	// started holds the inputs of the passes started, until the FloatingIPs' status shows them.
	started startedInputs
	// addresses shares the reads of Rancher's address settings between passes.
	addresses *sharedread.Reads[[]string]
	// first holds the passes back while the allocator works through a backlog.
	first *allocationFirst
	now   func() time.Time
}

// Register wires the triggers; the workers start once the caches are synced and the allocations
// repaired, so that a pass only ever sees addresses the allocation index already holds.
func Register(ctx context.Context, cc *controllers.Context) error {
	opts := options{GuestOptions: cc.Guest, FleetNamespace: cc.FleetNamespace, Namespace: cc.Namespace}
	installer, err := helminstall.NewInstaller(opts.HelmCacheDir, opts.ChartLimits, opts.Network)
	if err != nil {
		return err
	}
	installer.UseBundle(opts.GuestCharts)
	dyn, err := dynamic.NewForConfig(cc.RestConfig)
	if err != nil {
		return fmt.Errorf("creating the client of Rancher's settings: %w", err)
	}
	c := &controller{
		deps: deps{Settings: dyn.Resource(guest.SettingResource()), FloatingIPs: cc.FloatingIPs, Ranges: cc.Ranges.Cache(), Alloc: cc.Alloc, Provisioning: cc.ProvisioningClusters,
			Management: cc.ManagementClusters, Secrets: cc.Secrets, Store: cc.Store,
			Metrics: cc.Metrics, Recorder: cc.Recorder, Harvesters: cc.Harvesters},
		opts:      opts,
		addresses: sharedread.New[[]string](addressReuse, time.Now),
		first:     newAllocationFirst(),
		now:       time.Now,
		queue:     workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Name: "kube-fip-guest"}),
	}
	// What serves each guest's addresses is watched; a change that matters queues its pass.
	c.watches = guestwatch.New(ctx, guestwatch.Options{Changed: func(key string) { c.queue.Add(key) },
		Open: cc.Metrics.GuestWatches, Timeout: opts.Timeout})
	c.connect = connectThroughRancher(installer, c.watches, opts.Timeout)
	// Failures back off from 1s to 30s: an unreachable guest is retried soon, never hot. A
	// scheduled pass enters the queue through AddAfter, which counts it in workqueue_retries_total.
	c.next = newNextPasses(func(key string) { c.queue.AddAfter(key, 0) },
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 30*time.Second), clock.RealClock{})
	cc.FirstGuest.Set(c.firstStatus)
	c.FloatingIPs.OnChange(ctx, HandlerName, c.onFloatingIP)
	// The backlog is what the informer delivered and the allocator has not judged yet: seen as
	// it arrives, before any handler, the allocator's included, runs.
	if _, err := c.FloatingIPs.Informer().AddEventHandler(c.first.handler(c.now)); err != nil {
		return fmt.Errorf("watching the FloatingIPs waiting for an address: %w", err)
	}
	c.Management.OnChange(ctx, HandlerName, c.onManagementCluster)
	c.Provisioning.OnChange(ctx, HandlerName, c.onProvisioningCluster)
	c.Store.Subscribe(func(_, _ config.Config) { c.enqueueAll() })
	if c.Harvesters != nil {
		c.Harvesters.OnChange(c.harvesterChanged)
	}
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
		c.next.stop()
	}()
	cc.OnStart(c.start)
	return nil
}

// start runs the workers until ctx ends, after a first pass over every cluster has been queued:
// from there each pass queues the next after operateGuestClusterInterval.
func (c *controller) start(ctx context.Context) {
	c.enqueueAll()
	for i := 0; i < c.opts.Workers; i++ {
		go func() {
			for c.work(ctx) {
			}
		}()
	}
}

// work runs the pass of the next cluster in the queue and schedules the one after it; false once
// the queue shut down.
func (c *controller) work(ctx context.Context) bool {
	// Allocation first: no pass starts while the allocator works through a backlog; the queue
	// keeps every cluster that asked, once.
	for c.first.hold(c.now()) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(holdRecheck):
		}
	}
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	c.next.begin(key)
	after, err := c.sync(ctx, key)
	switch {
	case err != nil:
		logrus.Debugf("guest operations for cluster %s: %v; retrying", key, err)
		c.next.retry(key)
	case after > 0:
		c.next.after(key, after)
	default:
		c.next.none(key)
	}
	return true
}

func (c *controller) enqueueAll() {
	fips, err := c.FloatingIPs.Cache().List("", labels.Everything())
	if err != nil {
		return
	}
	for _, f := range fips {
		c.queue.Add(f.Namespace)
	}
	// And the clusters that keep addresses, whose FloatingIPs may all be gone (syncKept).
	for _, ns := range c.keptClusters() {
		c.queue.Add(ns)
	}
}

// onFloatingIP starts a pass for its cluster when what the guest must get changed: the address,
// the cluster or the updateConfigMap annotation, or the FloatingIP is going away or stopped naming
// a cluster. Status-only writes (our own) start nothing.
func (c *controller) onFloatingIP(key string, f *v1.FloatingIP) (*v1.FloatingIP, error) {
	// A deleted FloatingIP was seen before with its deletionTimestamp: its finalizer holds it.
	if f == nil {
		c.started.forget(key)
		return f, nil
	}
	cluster := f.Annotations[v1.AnnotationClusterName]
	switch {
	case f.DeletionTimestamp != nil || cluster == "":
		// It matters only if a pass worked from it: another FloatingIP of the cluster may take
		// over. One that never named a cluster does not run its namespace's pass.
		if f.Status.GuestInputs != "" || (f.DeletionTimestamp != nil && cluster != "") {
			c.queue.Add(f.Namespace)
		}
	default:
		c.enqueueIfNew(f)
	}
	return f, nil
}
