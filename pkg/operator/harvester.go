package operator

import (
	"fmt"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"

	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/harvesterview"
	"github.com/kubefip/kube-fip-operator/pkg/segments"
)

// harvesterOptions tune the reading of the Harvester clusters the ranges name.
func (o *Operator) harvesterOptions() harvesterview.Options {
	return harvesterview.Options{Interval: o.opts.HarvesterReadInterval, Timeout: o.opts.GuestTimeout, Limits: segments.DefaultLimits()}
}

// harvesterReader reads a Harvester cluster for the webhook with live GETs: a standby replica
// has no caches.
func (o *Operator) harvesterReader() (*harvesterview.Reader, error) {
	prov, err := provisioning.NewFactoryFromConfig(o.rest)
	if err != nil {
		return nil, fmt.Errorf("creating the webhook's provisioning client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(o.rest)
	if err != nil {
		return nil, fmt.Errorf("creating the webhook's settings client: %w", err)
	}
	clusters := prov.Provisioning().V1().Cluster()
	reacher := &harvesterview.Reacher{
		// A list by name, not a get: the chart grants list and watch of provisioning clusters,
		// which the controllers need, and nothing more.
		Clusters: func(namespace, name string) (*provv1.Cluster, error) {
			list, err := clusters.List(namespace, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
			if err != nil {
				return nil, err
			}
			if len(list.Items) != 1 {
				return nil, apierrors.NewNotFound(provv1.Resource("clusters"), name)
			}
			return &list.Items[0], nil
		},
		Secrets: o.client.CoreV1(), Settings: dyn.Resource(guest.SettingResource()),
		FleetNamespace: o.opts.FleetNamespace, Timeout: o.opts.GuestTimeout,
	}
	return &harvesterview.Reader{Reacher: reacher, Limits: o.harvesterOptions().Limits}, nil
}
