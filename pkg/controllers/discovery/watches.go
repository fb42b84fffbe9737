package discovery

import (
	"context"
	"fmt"
	"strings"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"github.com/rancher/wrangler/v2/pkg/kv"
	"github.com/rancher/wrangler/v2/pkg/relatedresource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/cachetrim"
	"github.com/kubefip/kube-fip-operator/pkg/controllers"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
)

// Index names. The cluster indexes map a field of the provisioning cluster back to it; the
// FloatingIP indexes find a cluster's FloatingIPs.
const (
	clusterByNamespace       = "discovery.kubefip.k8s.binbash.org/cluster-by-namespace"
	clusterByMachineConfig   = "discovery.kubefip.k8s.binbash.org/cluster-by-machine-config"
	fipByGuestCluster        = "discovery.kubefip.k8s.binbash.org/floatingip-by-guest-cluster"
	fipByProvisioningCluster = "discovery.kubefip.k8s.binbash.org/floatingip-by-provisioning-cluster"
)

// guestNamespacePrefix starts the namespace of every Rancher v2 downstream cluster; any other
// namespace is none of discovery's business.
const guestNamespacePrefix = "c-m-"

// HarvesterConfigResource is the Harvester node driver's machine configuration.
func HarvesterConfigResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "rke-machine-config.cattle.io", Version: "v1", Resource: "harvesterconfigs"}
}

func (h *handler) addIndexers() {
	clusters := h.prov.Cache()
	clusters.AddIndexer(clusterByNamespace, func(c *provv1.Cluster) ([]string, error) {
		if strings.HasPrefix(c.Status.ClusterName, guestNamespacePrefix) {
			return []string{c.Status.ClusterName}, nil
		}
		return nil, nil
	})
	clusters.AddIndexer(clusterByMachineConfig, func(c *provv1.Cluster) ([]string, error) {
		if cp, ok, _ := harvester.ControlPlaneOf(c); ok {
			return []string{cp.ConfigNamespace + "/" + cp.ConfigName}, nil
		}
		return nil, nil
	})
	fips := h.fips.Cache()
	fips.AddIndexer(fipByGuestCluster, func(f *v1.FloatingIP) ([]string, error) {
		if name := f.Annotations[v1.AnnotationClusterName]; name != "" {
			return []string{f.Namespace + "/" + name}, nil
		}
		return nil, nil
	})
	fips.AddIndexer(fipByProvisioningCluster, func(f *v1.FloatingIP) ([]string, error) {
		if key := f.Annotations[v1.AnnotationProvisioningCluster]; key != "" {
			return []string{key}, nil
		}
		return nil, nil
	})
}

// watchCached wakes clusters on changes of the kinds the shared controller factory caches.
func (h *handler) watchCached(ctx context.Context) {
	clusters := h.prov
	relatedresource.Watch(ctx, HandlerName+"-namespace", h.clustersOfNamespace, clusters, h.namespaces)
	relatedresource.Watch(ctx, HandlerName+"-management", h.clustersOfManagementCluster, clusters, h.mgmt)
	relatedresource.Watch(ctx, HandlerName+"-range", h.clustersOfRange, clusters, h.ranges)
	relatedresource.Watch(ctx, HandlerName+"-floatingip", h.clustersOfFloatingIP, clusters, h.fips)
}

func (h *handler) clustersOfNamespace(_, name string, _ runtime.Object) ([]relatedresource.Key, error) {
	if !strings.HasPrefix(name, guestNamespacePrefix) {
		return nil, nil
	}
	return h.clustersByIndex(clusterByNamespace, name)
}

func (h *handler) clustersOfManagementCluster(_, name string, _ runtime.Object) ([]relatedresource.Key, error) {
	return h.waiters.of(managementDep(name)), nil
}

func (h *handler) clustersOfRange(_, _ string, obj runtime.Object) ([]relatedresource.Key, error) {
	r, ok := obj.(*v1.FloatingIPRange)
	if !ok || r.Annotations[v1.AnnotationHarvesterClusterName] == "" {
		return nil, nil
	}
	return h.waiters.of(rangeDep(strings.TrimSpace(r.Annotations[v1.AnnotationHarvesterClusterName]))), nil
}

// clustersOfFloatingIP wakes the cluster of a FloatingIP that changed or went away: a cluster
// whose FloatingIP was deleted by hand gets a new one, and a FloatingIP whose cluster is gone
// (deleted while the operator was down) is found at start and deleted.
func (h *handler) clustersOfFloatingIP(namespace, _ string, obj runtime.Object) ([]relatedresource.Key, error) {
	keys, err := h.clustersByIndex(clusterByNamespace, namespace)
	if f, ok := obj.(*v1.FloatingIP); ok && f.Annotations[v1.AnnotationProvisioningCluster] != "" {
		keys = append(keys, relatedresource.FromString(f.Annotations[v1.AnnotationProvisioningCluster]))
	}
	return keys, err
}

func (h *handler) clustersByIndex(index, value string) ([]relatedresource.Key, error) {
	clusters, err := h.prov.Cache().GetByIndex(index, value)
	if err != nil {
		return nil, err
	}
	keys := make([]relatedresource.Key, 0, len(clusters))
	for _, c := range clusters {
		keys = append(keys, relatedresource.NewKey(c.Namespace, c.Name))
	}
	return keys, nil
}

// watchUncached builds the watches the shared controller factory does not serve and hands them to
// the operator, which runs them and waits for them with the shared caches.
//
// HarvesterConfigs have no Go type (Rancher builds their CRD at run time), so client-go's dynamic
// informer reads them as unstructured objects. It is optional: a Rancher without the Harvester node
// driver has no such CRD, and that must not keep the operator's other controllers from starting.
// When the CRD is absent at start-up the informer still runs and fills in once the CRD appears; a
// cluster meanwhile waits for its HarvesterConfig, and the informer's add brings it back.
//
// Cloud credentials are not watched at all: they hold Harvester kubeconfigs, and a list or watch
// of Secrets returns them in full. Each is read with one GET by name, and a cluster whose
// credential is missing or unusable asks again on a timer (credentialRetry).
func (h *handler) watchUncached(c *controllers.Context) error {
	dyn, err := dynamic.NewForConfig(h.restConfig)
	if err != nil {
		return fmt.Errorf("creating the dynamic client: %w", err)
	}
	configs := dynamicinformer.NewFilteredDynamicInformer(dyn, HarvesterConfigResource(), h.fleetNamespace, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil)
	// Only what harvester.NetworkOf reads is kept: not the VMs' cloud-init data.
	if err := configs.Informer().SetTransform(cachetrim.HarvesterConfig); err != nil {
		return fmt.Errorf("trimming the HarvesterConfig cache: %w", err)
	}
	h.machineConfigs = configs.Lister()
	if _, err := configs.Informer().AddEventHandler(h.enqueueByIndex(clusterByMachineConfig)); err != nil {
		return fmt.Errorf("watching HarvesterConfigs: %w", err)
	}
	c.AddOptionalInformer("HarvesterConfigs", HarvesterConfigResource(), configs.Informer())
	return nil
}

// enqueueByIndex wakes the clusters whose index entry is the changed object's namespace/name.
func (h *handler) enqueueByIndex(index string) cache.ResourceEventHandler {
	enqueue := func(obj interface{}) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return
		}
		keys, _ := h.clustersByIndex(index, key)
		for _, k := range keys {
			h.prov.Enqueue(k.Namespace, k.Name)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
		DeleteFunc: enqueue,
	}
}

// splitKey splits a cache key into namespace and name.
func splitKey(key string) (string, string) { return kv.RSplit(key, "/") }
