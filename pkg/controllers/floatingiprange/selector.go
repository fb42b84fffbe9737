package floatingiprange

import (
	"fmt"
	"sync"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	provcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io/v1"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
)

// selectors tells how many of Rancher's provisioning clusters each range's clusterSelector
// matches, and wakes the ranges with a selector when a cluster's labels change.
type selectors struct {
	clusters provcontrollers.ClusterController
	fleet    string

	mu sync.Mutex
	// seen are the labels each provisioning cluster had when last seen, so that only a change
	// of labels (or a cluster coming or going), not each status update, wakes the ranges.
	seen map[string]string
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

// labelsChanged records c's labels and reports whether they differ from those last seen.
func (s *selectors) labelsChanged(key string, c *provv1.Cluster) bool {
	now := ""
	if c != nil && c.DeletionTimestamp == nil {
		now = "+" + labels.Set(c.Labels).String()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[key] == now {
		return false
	}
	if now == "" {
		delete(s.seen, key)
	} else {
		s.seen[key] = now
	}
	return true
}

// OnClusterChange runs the ranges with a clusterSelector again when a provisioning cluster's labels
// change, or a cluster comes or goes.
func (h *handler) OnClusterChange(key string, c *provv1.Cluster) (*provv1.Cluster, error) {
	if !h.selectors.labelsChanged(key, c) {
		return c, nil
	}
	all, err := h.ranges.Cache().List(labels.Everything())
	if err != nil {
		return c, err
	}
	for _, r := range all {
		if r.Spec.ClusterSelector != nil {
			h.ranges.Enqueue(r.Name)
		}
	}
	return c, nil
}
