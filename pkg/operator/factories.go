package operator

import (
	"fmt"

	lassocache "github.com/rancher/lasso/pkg/cache"
	"github.com/rancher/lasso/pkg/controller"
	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"github.com/rancher/wrangler/v2/pkg/generated/controllers/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/cachetrim"

	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io"
)

// factories are the generated controller factories, all sharing one lasso controller factory so
// that every kind has one informer and one work queue however many controllers use it.
type factories struct {
	Shared       controller.SharedControllerFactory
	Core         *core.Factory
	Kubefip      *kubefip.Factory
	Provisioning *provisioning.Factory
	Management   *management.Factory
}

func (o *Operator) newFactories() (*factories, error) {
	shared, err := controller.NewSharedControllerFactoryFromConfigWithOptions(o.rest, o.scheme, &controller.SharedControllerFactoryOptions{
		DefaultWorkers: o.opts.Threads,
		CacheOptions: &lassocache.SharedCacheFactoryOptions{
			// Least privilege: ConfigMaps are read only in the operator's namespace. No Secret is
			// cached, listed or watched anywhere: each one needed is read with a GET by name.
			KindNamespace: map[schema.GroupVersionKind]string{
				corev1.SchemeGroupVersion.WithKind("ConfigMap"): o.opts.Namespace,
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the controller factory: %w", err)
	}
	if err := trimCaches(shared.SharedCacheFactory()); err != nil {
		return nil, err
	}
	f := &factories{Shared: shared}
	if f.Core, err = core.NewFactoryFromConfigWithOptions(o.rest, &core.FactoryOptions{SharedControllerFactory: shared}); err != nil {
		return nil, err
	}
	if f.Kubefip, err = kubefip.NewFactoryFromConfigWithOptions(o.rest, &kubefip.FactoryOptions{SharedControllerFactory: shared}); err != nil {
		return nil, err
	}
	if f.Provisioning, err = provisioning.NewFactoryFromConfigWithOptions(o.rest, &provisioning.FactoryOptions{SharedControllerFactory: shared}); err != nil {
		return nil, err
	}
	if f.Management, err = management.NewFactoryFromConfigWithOptions(o.rest, &management.FactoryOptions{SharedControllerFactory: shared}); err != nil {
		return nil, err
	}
	return f, nil
}

// cachedKind is one kind the shared controller factory caches, named as the generated controllers
// name it (resource and scope), and what its cache keeps of each object.
type cachedKind struct {
	gvk        schema.GroupVersionKind
	resource   string
	namespaced bool
	transform  toolscache.TransformFunc
}

// cachedKinds are what each shared cache keeps of its objects (see pkg/cachetrim): every kind the
// generated controllers cache is listed, so that none keeps more than its readers use.
func cachedKinds() []cachedKind {
	return []cachedKind{
		{v1.SchemeGroupVersion.WithKind("FloatingIP"), "floatingips", true, cachetrim.ManagedFieldsOnly},
		{v1.SchemeGroupVersion.WithKind("FloatingIPRange"), "floatingipranges", false, cachetrim.ManagedFieldsOnly},
		{v1.SchemeGroupVersion.WithKind("FloatingIPAllocation"), "floatingipallocations", false, cachetrim.ManagedFieldsOnly},
		{corev1.SchemeGroupVersion.WithKind("ConfigMap"), "configmaps", true, cachetrim.ManagedFieldsOnly},
		{corev1.SchemeGroupVersion.WithKind("Namespace"), "namespaces", false, cachetrim.Namespace},
		{provv1.SchemeGroupVersion.WithKind("Cluster"), "clusters", true, cachetrim.ProvisioningCluster},
		{mgmtv3.SchemeGroupVersion.WithKind("Cluster"), "clusters", false, cachetrim.ManagementCluster},
	}
}

// trimCaches creates the shared informer of every kind of cachedKinds with its transform, before
// any controller asks for it and before anything starts, as the generated controllers would create
// it (same resource and scope, so the same informer): they then share these informers.
func trimCaches(caches lassocache.SharedCacheFactory) error {
	for _, k := range cachedKinds() {
		informer, err := caches.ForResourceKind(k.gvk.GroupVersion().WithResource(k.resource), k.gvk.Kind, k.namespaced)
		if err != nil {
			return fmt.Errorf("creating the cache of %s: %w", k.gvk.Kind, err)
		}
		if err := informer.SetTransform(k.transform); err != nil {
			return fmt.Errorf("trimming the cache of %s: %w", k.gvk.Kind, err)
		}
	}
	return nil
}
