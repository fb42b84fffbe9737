// Package discovery gives every Rancher guest cluster provisioned on Harvester its FloatingIP.
//
// The provisioning cluster (provisioning.cattle.io/v1 in the fleet namespace) is the unit of work.
// Its handler finds the cluster's c-m- namespace, its control-plane machine pool, the pool's cloud
// credential and through it the Harvester management cluster, the pool's HarvesterConfig and its VM
// network, picks the FloatingIPRange, and creates the FloatingIP <cluster>-kubevip; the FloatingIP
// controllers allocate the address from there. A dual-stack cluster (cluster-cidr and service-cidr
// of its machineGlobalConfig list both families) also gets <cluster>-kubevip-ipv4 or -ipv6, for the
// family the first one is not of, from a range of that family on its network.
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
	"time"

	corecontrollers "github.com/rancher/wrangler/v2/pkg/generated/controllers/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/controllers"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	mgmtcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io/v3"
	provcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io/v1"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/pkg/sharedread"
)

// HandlerName names the provisioning cluster handler; the watches feeding it are named after it.
// It never changes.
const HandlerName = "kube-fip-discovery"

// handler holds what discovery reads and writes, copied from the controllers.Context in Register,
// as every controller's handler does.
type handler struct {
	ctx                 context.Context
	fleetNamespace      string
	globalDataNamespace string
	fips                kubefipcontrollers.FloatingIPController
	ranges              kubefipcontrollers.FloatingIPRangeController
	namespaces          corecontrollers.NamespaceController
	prov                provcontrollers.ClusterController
	mgmt                mgmtcontrollers.ClusterController
	secrets             typedcorev1.SecretsGetter
	restConfig          *rest.Config
	alloc               *allocation.Manager
	store               *config.Store
	metrics             *metrics.Metrics
	recorder            record.EventRecorder
	// machineConfigs lists the HarvesterConfigs of the fleet namespace (unstructured).
	machineConfigs cache.GenericLister
	waiters        *waiters
	recorded       *recordedEvents
	credentials    *credentialRetries
	credentialIDs  *sharedread.Reads[string]
}

// Register registers the provisioning cluster handler and every watch that wakes it, and hands the
// watch outside the shared controller factory to the operator.
func Register(ctx context.Context, c *controllers.Context) error {
	h := &handler{ctx: ctx,
		fleetNamespace: c.FleetNamespace, globalDataNamespace: c.GlobalDataNamespace,
		fips: c.FloatingIPs, ranges: c.Ranges, namespaces: c.Namespaces, prov: c.ProvisioningClusters, mgmt: c.ManagementClusters,
		secrets: c.Secrets, restConfig: c.RestConfig,
		alloc: c.Alloc, store: c.Store, metrics: c.Metrics, recorder: c.Recorder,
		waiters: newWaiters(), recorded: newRecordedEvents(), credentials: newCredentialRetries(), credentialIDs: sharedread.New[string](credentialReuse, time.Now)}
	h.addIndexers()
	if err := h.watchUncached(c); err != nil {
		return fmt.Errorf("guest cluster discovery: %w", err)
	}
	h.watchCached(ctx)
	c.ProvisioningClusters.OnChange(ctx, HandlerName, h.OnClusterChange)
	return nil
}
