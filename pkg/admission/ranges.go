package admission

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"

	"github.com/rancher/wrangler/v2/pkg/webhook"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// ranges judges a FloatingIPRange create, edit or delete: no overlap with another range of the
// same address space, and no address a FloatingIP holds taken away unless AnnotationAllowOrphans
// says so.
func (v *Validator) ranges(req *webhook.Request) (verdict, error) {
	old, r, err := decode[v1.FloatingIPRange](req)
	if err != nil {
		return verdict{}, err
	}
	if req.Operation == admissionv1.Delete {
		if old == nil {
			return allow(), nil
		}
		return v.rangeDelete(old)
	}
	if r == nil || r.DeletionTimestamp != nil || (old != nil && sameDefinition(old, r)) {
		// Metadata, finalizers and status: nothing the rules judge changed.
		return allow(), nil
	}
	pool, err := ipam.NewPool(r.Spec.IPRange, r.Spec.Exclude)
	if err != nil {
		return refuse("FloatingIPRange %s: %s; correct spec.iprange and spec.exclude", r.Name, redact.Shorten(err.Error(), redact.MaxValue)), nil
	}
	all, err := v.deps.Ranges.List(metav1.ListOptions{})
	if err != nil {
		return verdict{}, fmt.Errorf("listing FloatingIPRanges: %w", err)
	}
	if o := overlapping(r, pool, old, all.Items); o != nil {
		return refuse("FloatingIPRange %s (%s) overlaps FloatingIPRange %s (%s) in the same address space (Harvester cluster %q, network %q); change one of them so that no address is in both",
			r.Name, r.Spec.IPRange, o.Name, o.Spec.IPRange, v1.SpaceOf(r).HarvesterClusterName, v1.SpaceOf(r).HarvesterNetworkName), nil
	}
	wire := v.onTheWire(r, old, all.Items)
	if wire.refusal != "" || old == nil {
		return wire, nil
	}
	out, err := v.keepsHeld(old, r, pool)
	out.warnings = append(wire.warnings, out.warnings...)
	return out, err
}

// keepsHeld refuses an edit of old into r that takes away addresses FloatingIPs hold, unless r
// carries AnnotationAllowOrphans.
func (v *Validator) keepsHeld(old, r *v1.FloatingIPRange, pool *ipam.Pool) (verdict, error) {
	held, err := v.heldOutside(old.Name, pool)
	if err != nil || len(held) == 0 {
		return allow(), err
	}
	if r.Annotations[AnnotationAllowOrphans] == "true" {
		return allow(fmt.Sprintf("%s is set: %s stay held outside the range and FloatingIPRange %s reports OrphanedAllocations until they are released",
			AnnotationAllowOrphans, redact.Names(held, maxNamed), r.Name)), nil
	}
	return refuse("this edit of FloatingIPRange %s takes away addresses FloatingIPs hold (%s); keep them in spec.iprange and out of spec.exclude, or set the annotation %s: \"true\" to force it",
		r.Name, redact.Names(held, maxNamed), AnnotationAllowOrphans), nil
}

// rangeDelete refuses to delete a range whose addresses FloatingIPs hold, unless the range
// carries AnnotationAllowOrphans.
func (v *Validator) rangeDelete(old *v1.FloatingIPRange) (verdict, error) {
	if old.Annotations[AnnotationAllowOrphans] == "true" {
		return allow(), nil
	}
	held, err := v.heldOutside(old.Name, nil)
	if err != nil || len(held) == 0 {
		return allow(), err
	}
	return refuse("FloatingIPRange %s cannot be deleted while FloatingIPs hold its addresses (%s); delete those FloatingIPs or their guest clusters first, or set the annotation %s: \"true\" on the range to force it",
		old.Name, redact.Names(held, maxNamed), AnnotationAllowOrphans), nil
}

// sameDefinition reports whether what the rules judge is unchanged: the addresses and the space.
func sameDefinition(a, b *v1.FloatingIPRange) bool {
	return a.Spec.IPRange == b.Spec.IPRange && slices.Equal(a.Spec.Exclude, b.Spec.Exclude) && v1.SpaceOf(a) == v1.SpaceOf(b)
}

// overlapping returns a range of r's address space, other than r, that could hand out an address
// pool could (the overlap rule the controller applies, ipam.Pool.Overlaps), or nil. An overlap
// the range already had before this edit is left to the controller, which names the older range.
func overlapping(r *v1.FloatingIPRange, pool *ipam.Pool, old *v1.FloatingIPRange, all []v1.FloatingIPRange) *v1.FloatingIPRange {
	space := v1.SpaceOf(r).Hash()
	var oldPool *ipam.Pool
	if old != nil && v1.SpaceOf(old).Hash() == space {
		oldPool, _ = ipam.NewPool(old.Spec.IPRange, old.Spec.Exclude)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	for i := range all {
		o := &all[i]
		if o.Name == r.Name || o.DeletionTimestamp != nil || v1.SpaceOf(o).Hash() != space {
			continue
		}
		op, err := ipam.NewPool(o.Spec.IPRange, o.Spec.Exclude)
		if err != nil || !pool.Overlaps(op) || oldPool.Overlaps(op) {
			continue
		}
		return o
	}
	return nil
}

// heldOutside lists, as "address (FloatingIP namespace/name)", the addresses of range rangeName
// that allocations record and pool does not hand out (all of them when pool is nil). Retained
// addresses count: they are kept for a deleted cluster that may come back.
func (v *Validator) heldOutside(rangeName string, pool *ipam.Pool) ([]string, error) {
	sel := labels.SelectorFromSet(labels.Set{v1.LabelRange: v1.RangeLabelValue(rangeName)}).String()
	list, err := v.deps.Allocations.List(metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing the allocations of FloatingIPRange %s: %w", rangeName, err)
	}
	var out []string
	for _, a := range list.Items {
		if a.Spec.Range != rangeName || a.DeletionTimestamp != nil {
			continue
		}
		addr, err := netip.ParseAddr(a.Spec.Address)
		if err != nil || (pool != nil && pool.Check(addr) == nil) {
			continue
		}
		who := fmt.Sprintf("FloatingIP %s/%s", a.Spec.Owner.Namespace, a.Spec.Owner.Name)
		if a.Spec.Retained != nil {
			who = fmt.Sprintf("retained for cluster %s/%s", a.Spec.Retained.Cluster.Namespace, a.Spec.Retained.Cluster.Name)
		}
		out = append(out, fmt.Sprintf("%s held by %s", addr, who))
	}
	sort.Strings(out)
	return out, nil
}
