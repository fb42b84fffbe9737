package floatingiprange

import (
	"fmt"
	"maps"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	provcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io/v1"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
)

// selectors tells how many of Rancher's provisioning clusters each range's clusterSelector
// matches.
type selectors struct {
	clusters provcontrollers.ClusterController
	fleet    string
}

// noneSelected is the Warning of a range whose valid selector matches no provisioning cluster,
// or nil. An invalid selector is the range's InvalidRange, said by its Ready condition.
func (s *selectors) noneSelected(r *v1.FloatingIPRange) *problem.Problem {
	sel := allocation.ClusterSelectorOf(r)
	if s == nil || s.clusters == nil || !sel.Set() || sel.Err() != nil {
		return nil
	}
	all, err := s.clusters.Cache().List(s.fleet, labels.Everything())
	if err != nil {
		return nil
	}
	for _, c := range all {
		if c.DeletionTimestamp == nil && sel.Selects(c.Labels) {
			return nil
		}
	}
	return &problem.Problem{Reason: v1.ReasonNoClusterSelected, Message: fmt.Sprintf(
		"spec.clusterSelector (%s) matches none of the %d provisioning clusters in %s: the range hands out nothing until a cluster's labels match",
		sel, len(all), s.fleet)}
}

// watchProvisioningClusters runs the ranges with a clusterSelector again when a provisioning
// cluster comes or goes, or its labels or its deletion change: informer events only, the old
// object against the new, so that a status update of a cluster wakes no range.
func (h *handler) watchProvisioningClusters(clusters provcontrollers.ClusterController) error {
	wake := func(interface{}) {
		h.enqueueRanges(func(r *v1.FloatingIPRange) bool { return r.Spec.ClusterSelector != nil })
	}
	_, err := clusters.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: wake,
		UpdateFunc: func(old, obj interface{}) {
			a, okA := old.(*provv1.Cluster)
			b, okB := obj.(*provv1.Cluster)
			if !okA || !okB || !maps.Equal(a.Labels, b.Labels) || (a.DeletionTimestamp == nil) != (b.DeletionTimestamp == nil) {
				wake(obj)
			}
		},
		DeleteFunc: wake,
	})
	return err
}
