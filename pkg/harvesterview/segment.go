package harvesterview

import (
	"sort"
	"strings"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
	"github.com/kubefip/kube-fip-operator/pkg/segments"
)

// OnSegment returns the ranges of others, of another address space than r, whose network is on
// r's segment seg in view and that could hand out an address r could: two names of one layer-2
// segment (two NetworkAttachmentDefinitions of one cluster network and VLAN, or the bare and the
// namespace/name form of one network) are one place on the wire. Ranges of r's own space are left
// to the overlap rule of a space. The result is oldest first, then by name.
func OnSegment(r *v1.FloatingIPRange, seg segments.Segment, view *segments.View, others []*v1.FloatingIPRange) []*v1.FloatingIPRange {
	pool, err := ipam.NewPool(r.Spec.IPRange, r.Spec.Exclude)
	if err != nil || view == nil {
		return nil
	}
	display := strings.TrimSpace(r.Annotations[v1.AnnotationHarvesterClusterName])
	space := v1.SpaceOf(r).Hash()
	var out []*v1.FloatingIPRange
	for _, o := range others {
		if o.Name == r.Name || o.DeletionTimestamp != nil || v1.SpaceOf(o).Hash() == space ||
			strings.TrimSpace(o.Annotations[v1.AnnotationHarvesterClusterName]) != display {
			continue
		}
		n, found, _ := view.NetworkNamed(strings.TrimSpace(o.Annotations[v1.AnnotationHarvesterNetworkName]))
		if !found || n.Segment != seg {
			continue
		}
		op, err := ipam.NewPool(o.Spec.IPRange, o.Spec.Exclude)
		if err == nil && pool.Overlaps(op) {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return Older(out[i], out[j]) })
	return out
}

// Older tells whether a was created before b, the name deciding a tie: of two ranges that overlap,
// the newer one is the one refused.
func Older(a, b *v1.FloatingIPRange) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}
