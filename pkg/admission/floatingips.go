package admission

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/rancher/wrangler/v2/pkg/webhook"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// floatingIP judges a FloatingIP whose spec.ipaddress a person sets: the address must be free
// (not held by another FloatingIP, not retained for another cluster) and in a range of the
// FloatingIP's address space. Everything else is the controller's: a FloatingIP without a static
// address, one whose range does not exist yet, namespaces and cluster selectors.
func (v *Validator) floatingIP(req *webhook.Request) (verdict, error) {
	old, f, err := decode[v1.FloatingIP](req)
	if err != nil || f == nil {
		return allow(), err
	}
	want := strings.TrimSpace(f.Spec.IPAddress)
	if want == "" || f.DeletionTimestamp != nil || (old != nil && strings.TrimSpace(old.Spec.IPAddress) == want) {
		return allow(), nil
	}
	addr, err := netip.ParseAddr(want)
	if err != nil {
		return allow(), nil // the schema refuses it, with its own message
	}
	rangeName := f.Annotations[v1.AnnotationFloatingIPRange]
	if rangeName == "" {
		return allow(), nil
	}
	all, err := v.deps.Ranges.List(metav1.ListOptions{})
	if err != nil {
		return verdict{}, fmt.Errorf("listing FloatingIPRanges: %w", err)
	}
	i := slices.IndexFunc(all.Items, func(r v1.FloatingIPRange) bool { return r.Name == rangeName })
	if i < 0 {
		return allow(), nil
	}
	named := &all.Items[i]
	space := v1.SpaceOf(named)
	if held, err := v.holder(space, addr, f); err != nil || held != "" {
		if held != "" {
			return refuse("%s is %s; choose a free address of FloatingIPRange %s, or leave spec.ipaddress empty to get one", addr, held, rangeName), nil
		}
		return verdict{}, err
	}
	if containing(all.Items, space, addr) {
		return allow(), nil
	}
	return refuse("%s is in no FloatingIPRange of FloatingIP %s/%s's address space (Harvester cluster %q, network %q; FloatingIPRange %s is %s); choose an address of one of them, or leave spec.ipaddress empty to get one",
		addr, f.Namespace, f.Name, space.HarvesterClusterName, space.HarvesterNetworkName, rangeName, named.Spec.IPRange), nil
}

// holder says who other than f holds or keeps addr in space ("held by FloatingIP ns/name",
// "retained for cluster ns/name"), or "" when it is free for f. The allocation object is listed
// by name (a field selector) so that the list permission the operator has is enough.
func (v *Validator) holder(space v1.AddressSpace, addr netip.Addr, f *v1.FloatingIP) (string, error) {
	name := v1.AllocationName(space, addr)
	list, err := v.deps.Allocations.List(metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return "", fmt.Errorf("reading the allocation of %s: %w", addr, err)
	}
	for _, a := range list.Items {
		if a.Name != name || a.DeletionTimestamp != nil {
			continue
		}
		if r := a.Spec.Retained; r != nil {
			if c, ok := v1.ProvisioningClusterOf(f); ok && c == r.Cluster {
				return "", nil
			}
			until := r.Until.UTC().Format("2006-01-02T15:04:05Z")
			if !r.WhileServed {
				return fmt.Sprintf("retained for cluster %s/%s until %s", r.Cluster.Namespace, r.Cluster.Name, until), nil
			}
			if o := a.Spec.Owner; o.Namespace == f.Namespace && o.Name == f.Name {
				return "", nil // the FloatingIP that gave it up asks for it again
			}
			by := "its Services may serve it"
			if r.ServedBy != "" {
				by = "its Services " + redact.Shorten(r.ServedBy, redact.MaxValue) + " serve it"
			}
			return fmt.Sprintf("kept for cluster %s/%s while %s, until %s if that guest cannot be read (delete those Services in that guest, or the FloatingIPAllocation %s, to free it)",
				r.Cluster.Namespace, r.Cluster.Name, by, until, a.Name), nil
		}
		if o := a.Spec.Owner; o.Namespace != f.Namespace || o.Name != f.Name {
			return fmt.Sprintf("held by FloatingIP %s/%s", o.Namespace, o.Name), nil
		}
	}
	return "", nil
}

// containing reports whether a range of space, not being deleted, hands out addr.
func containing(all []v1.FloatingIPRange, space v1.AddressSpace, addr netip.Addr) bool {
	for i := range all {
		r := &all[i]
		if r.DeletionTimestamp != nil || v1.SpaceOf(r) != space {
			continue
		}
		if p, err := ipam.NewPool(r.Spec.IPRange, r.Spec.Exclude); err == nil && p.Check(addr) == nil {
			return true
		}
	}
	return false
}
