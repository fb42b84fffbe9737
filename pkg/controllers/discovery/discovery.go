// Package discovery gives every Rancher guest cluster provisioned on Harvester its FloatingIP.
//
// The provisioning cluster (provisioning.cattle.io/v1 in the fleet namespace) is the unit of work.
// Its handler finds the cluster's c-m- namespace, its control-plane machine pool, the pool's cloud
// credential and through it the Harvester management cluster, the pool's HarvesterConfig and its VM
// network, picks the FloatingIPRange, and creates the FloatingIP <cluster>-kubevip; the FloatingIP
// controllers allocate the address from there.
//
// Every other object the decision depends on wakes the provisioning clusters waiting for it, so
// whichever object appears last triggers the decision at once, with no timer and no start-up
// delay: namespaces, credentials and HarvesterConfigs through cache indexes on fields of the
// provisioning cluster, management clusters and ranges (which the cluster names only indirectly)
// through a registry of waiting clusters, FloatingIPs through their annotations.
//
// Rancher's objects are only read: discovery puts no finalizer on them and writes nothing but
// Events. A removed cluster is noticed in OnChange (a nil object or a deletionTimestamp) and its
// FloatingIP deleted, whose own finalizer then releases the address.
package discovery

import (
	"context"
	"fmt"
	"net/netip"

	corecontrollers "github.com/rancher/wrangler/v2/pkg/generated/controllers/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	mgmtcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io/v3"
	provcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io/v1"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
)

// HandlerName names the provisioning cluster handler; the watches feeding it are named after it.
// It never changes.
const HandlerName = "kube-fip-discovery"

// AnnotationProvisioningCluster marks a FloatingIP discovery created with its provisioning cluster
// ("fleet-default/demo"), so that the FloatingIP is found and deleted when that cluster is gone,
// even when the operator was down while it was deleted.
const AnnotationProvisioningCluster = "kubefip.k8s.binbash.org/provisioning-cluster"

// Event reasons of discovery's own actions; the reasons of problems are in pkg/harvester.
const (
	ReasonFloatingIPCreated = "FloatingIPCreated"
	ReasonFloatingIPDeleted = "FloatingIPDeleted"
)

// Options are what discovery reads, writes and reports through.
type Options struct {
	// FleetNamespace holds the provisioning clusters and their HarvesterConfigs.
	FleetNamespace string
	// GlobalDataNamespace holds the cloud credentials.
	GlobalDataNamespace string

	Clusters    provcontrollers.ClusterController
	Management  mgmtcontrollers.ClusterController
	Namespaces  corecontrollers.NamespaceController
	FloatingIPs kubefipcontrollers.FloatingIPController
	Ranges      kubefipcontrollers.FloatingIPRangeController
	// Secrets reads cloud credentials one GET at a time: their data is never cached.
	Secrets typedcorev1.SecretsGetter
	// RestConfig builds the client of the HarvesterConfig watch, which the shared controller
	// factory does not serve.
	RestConfig *rest.Config
	// SecretMetadata are metadata-only informers on the Secrets of the fleet and global-data
	// namespaces, where cloud credentials live: they tell when a credential arrives without
	// caching its data. The operator shares them with the guest controller.
	SecretMetadata []cache.SharedIndexInformer

	// Proposals, when set, proposes each new FloatingIP its address, so that it is created with
	// spec.ipaddress set and the FloatingIP controller has no spec of its own to write.
	Proposals Proposals

	Metrics  *metrics.Metrics
	Recorder record.EventRecorder
}

// Proposals reserves an address for a FloatingIP about to be created; *allocation.Manager is one.
type Proposals interface {
	Propose(rangeName, namespace, name string) (netip.Addr, bool)
	Withdraw(rangeName string, addr netip.Addr, namespace, name string)
}

type handler struct {
	ctx  context.Context
	opts Options
	// machineConfigs lists the HarvesterConfigs of the fleet namespace (unstructured).
	machineConfigs cache.GenericLister
	waiters        *waiters
	recorded       *recordedEvents
}

// Register registers the provisioning cluster handler and every watch that wakes it, and starts
// the two watches outside the shared controller factory.
func Register(ctx context.Context, opts Options) error {
	h := &handler{ctx: ctx, opts: opts, waiters: newWaiters(), recorded: newRecordedEvents()}
	h.addIndexers()
	if err := h.watchUncached(ctx); err != nil {
		return fmt.Errorf("guest cluster discovery: %w", err)
	}
	h.watchCached(ctx)
	opts.Clusters.OnChange(ctx, HandlerName, h.OnClusterChange)
	return nil
}
