package floatingip

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// GuestNamespacePrefix starts the namespace of every Rancher v2 guest cluster: the name of its
// management cluster.
const GuestNamespacePrefix = "c-m-"

// namespaceAllowed says whether f may take an address from rangeName: in the namespace of a
// Rancher guest cluster (c-m-* with a management cluster of that name), or in one the range lists
// in spec.allowedNamespaces. Anyone who may create FloatingIPs somewhere could otherwise drain
// every range or squat on the addresses meant for guests. A FloatingIP that already holds an
// address of the range keeps that address, so that an upgrade takes nothing away; it gets no
// other one.
// When the range does not exist the claim says so.
func (h *handler) namespaceAllowed(f *v1.FloatingIP, rangeName string, want netip.Addr) (string, bool) {
	if strings.HasPrefix(f.Namespace, GuestNamespacePrefix) {
		if _, err := h.clusters.Get(f.Namespace); err == nil {
			return "", true
		}
	}
	r, err := h.ranges.Get(rangeName)
	if apierrors.IsNotFound(err) {
		return "", true
	}
	if err == nil && slices.Contains(r.Spec.AllowedNamespaces, f.Namespace) {
		return "", true
	}
	if held := h.alloc.HeldBy(rangeName, string(f.UID)); len(held) > 0 && (!want.IsValid() || slices.Contains(held, want)) {
		return "", true
	}
	return fmt.Sprintf("namespace %s belongs to no Rancher guest cluster (no management cluster %s) and FloatingIPRange %s "+
		"does not list it in spec.allowedNamespaces; no address is allocated until one of them is so",
		f.Namespace, f.Namespace, rangeName), false
}

// OnManagementClusterChange judges again the FloatingIPs of the cluster's namespace that were
// refused for it.
func (h *handler) OnManagementClusterChange(_ string, m *mgmtv3.Cluster) (*mgmtv3.Cluster, error) {
	if m == nil || !strings.HasPrefix(m.Name, GuestNamespacePrefix) {
		return m, nil
	}
	fips, err := h.fips.Cache().List(m.Name, labels.Everything())
	if err != nil {
		return m, err
	}
	for _, f := range fips {
		if c, ok := v1.GetCondition(f.Status.Conditions, v1.Allocated); ok && c.Reason == v1.ReasonNamespaceNotAllowed {
			h.fips.Enqueue(f.Namespace, f.Name)
		}
	}
	return m, nil
}
