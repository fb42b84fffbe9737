package operator

import (
	"fmt"

	"github.com/rancher/lasso/pkg/cache"
	"github.com/rancher/lasso/pkg/controller"
	"github.com/rancher/wrangler/v2/pkg/generated/controllers/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
		CacheOptions: &cache.SharedCacheFactoryOptions{
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
