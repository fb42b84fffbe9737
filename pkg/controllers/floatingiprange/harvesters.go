package floatingiprange

import (
	"fmt"
	"strings"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	mgmtcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io/v3"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// Index names: management clusters by display name, the name discovery matches a range's
// harvesterClusterName against, and ranges by that annotation.
const (
	managementByDisplayName = "kubefip.k8s.binbash.org/management-cluster-by-display-name"
	rangeByHarvesterCluster = "kubefip.k8s.binbash.org/range-by-harvester-cluster"
)

// harvesters tells whether a range's Harvester cluster is one Rancher knows: a management cluster
// whose spec.displayName is the range's harvesterClusterName, as discovery finds a guest cluster's
// ranges (the display name of the management cluster its cloud credential names). Any management
// cluster counts, since discovery takes whichever one a credential names: a range that names a
// guest cluster instead of a Harvester cluster stays Ready, a rarer mistake than a typo.
type harvesters struct {
	clusters mgmtcontrollers.ClusterCache
}

// displayName is the name a management cluster is matched by, as discovery reads it.
func displayName(m *mgmtv3.Cluster) string { return strings.TrimSpace(m.Spec.DisplayName) }

// harvesterClusterOf is a range's harvesterClusterName, as discovery reads it.
func harvesterClusterOf(r *v1.FloatingIPRange) string {
	return strings.TrimSpace(r.Annotations[v1.AnnotationHarvesterClusterName])
}

// unknown is the problem of a range whose harvesterClusterName is the display name of no
// management cluster, or nil; a range without the annotation has none.
func (k *harvesters) unknown(r *v1.FloatingIPRange) *problem.Problem {
	name := harvesterClusterOf(r)
	if k == nil || k.clusters == nil || name == "" {
		return nil
	}
	if known, err := k.clusters.GetByIndex(managementByDisplayName, name); err != nil || len(known) > 0 {
		return nil
	}
	return &problem.Problem{Reason: v1.ReasonUnknownHarvesterCluster, Message: fmt.Sprintf(
		"harvesterClusterName=%s is the display name of no cluster in Rancher, so guest cluster discovery gives no guest cluster an address "+
			"from this range (FloatingIPs that name it still get theirs); the range turns Ready as soon as a cluster of that name is in Rancher",
		redact.Shorten(name, redact.MaxValue))}
}

// indexHarvesters adds the indexes the Harvester cluster check and its wake-ups read.
func (h *handler) indexHarvesters(clusters mgmtcontrollers.ClusterCache) {
	clusters.AddIndexer(managementByDisplayName, func(m *mgmtv3.Cluster) ([]string, error) {
		if name := displayName(m); name != "" {
			return []string{name}, nil
		}
		return nil, nil
	})
	h.ranges.Cache().AddIndexer(rangeByHarvesterCluster, func(r *v1.FloatingIPRange) ([]string, error) {
		if name := harvesterClusterOf(r); name != "" {
			return []string{name}, nil
		}
		return nil, nil
	})
	h.harvesters = &harvesters{clusters: clusters}
}

// watchManagementClusters runs the ranges of a Harvester cluster again when a management cluster
// of its display name comes or goes, or is renamed to or from it. Informer events only, the old
// object against the new: a status heartbeat of a management cluster runs no range.
func (h *handler) watchManagementClusters(clusters mgmtcontrollers.ClusterController) error {
	h.indexHarvesters(clusters.Cache())
	_, err := clusters.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    h.enqueueRangesOf,
		UpdateFunc: h.managementClusterUpdated,
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			h.enqueueRangesOf(obj)
		},
	})
	return err
}

// managementClusterUpdated runs the ranges of the old and the new display name when it changed.
func (h *handler) managementClusterUpdated(old, obj interface{}) {
	a, okA := old.(*mgmtv3.Cluster)
	b, okB := obj.(*mgmtv3.Cluster)
	if okA && okB && displayName(a) == displayName(b) {
		return
	}
	h.enqueueRangesOf(old)
	h.enqueueRangesOf(obj)
}

// enqueueRangesOf runs the ranges whose harvesterClusterName is the management cluster's display
// name.
func (h *handler) enqueueRangesOf(obj interface{}) {
	m, ok := obj.(*mgmtv3.Cluster)
	if !ok || displayName(m) == "" {
		return
	}
	ranges, err := h.ranges.Cache().GetByIndex(rangeByHarvesterCluster, displayName(m))
	if err != nil {
		return
	}
	for _, r := range ranges {
		h.ranges.Enqueue(r.Name)
	}
}
