package discovery

import (
	"fmt"
	"slices"
	"strings"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"github.com/rancher/wrangler/v2/pkg/genericcondition"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
	"github.com/kubefip/kube-fip-operator/pkg/status"
)

// clusterFloatingIPs are the FloatingIPs of a guest cluster in its namespace: those discovery
// names for it, and any other annotated with the cluster's name.
func (h *handler) clusterFloatingIPs(namespace, cluster string) ([]*v1.FloatingIP, error) {
	fips, err := h.fips.Cache().GetByIndex(fipByGuestCluster, namespace+"/"+cluster)
	if err != nil {
		return nil, err
	}
	for _, second := range []harvester.Family{0, harvester.IPv4, harvester.IPv6} {
		f, err := h.fips.Cache().Get(namespace, floatingIPName(cluster, second))
		if err == nil && !slices.ContainsFunc(fips, func(o *v1.FloatingIP) bool { return o.Name == f.Name }) {
			fips = append(fips, f)
		}
	}
	return fips, nil
}

// checkNetworks shows on each FloatingIP of a cluster that has them whether its address is of a
// range that names another network than the cluster's control-plane pool: Warning=True with
// reason AddressOnAnotherNetwork and a Warning Event when it turns so, and no Warning once it no
// longer is. Such an address is kept, never moved or released: the guest may use it already, and
// giving it up is a person's choice. FloatingIPs made before a range of another network was
// refused, by an earlier release or by hand, are the ones this finds. Only caches are read; a
// cluster whose network cannot be told now is left as it is.
func (h *handler) checkNetworks(c *provv1.Cluster, namespace string) error {
	cp, ok, p := harvester.ControlPlaneOf(c)
	if p != nil || !ok {
		return nil
	}
	choice, err := h.network(cp)
	if err != nil {
		return nil
	}
	fips, err := h.clusterFloatingIPs(namespace, c.Name)
	if err != nil {
		return err
	}
	for _, f := range fips {
		if err := h.showNetwork(f, choice.Network); err != nil {
			return err
		}
	}
	return nil
}

// showNetwork brings f's Warning condition in line with otherNetwork's verdict.
func (h *handler) showNetwork(f *v1.FloatingIP, n harvester.Network) error {
	if f.DeletionTimestamp != nil {
		return nil
	}
	msg := h.otherNetwork(f, n)
	shown, ok := v1.GetCondition(f.Status.Conditions, v1.Warning)
	ours := ok && shown.Reason == v1.ReasonAddressOnAnotherNetwork
	switch {
	case msg == "" && !ours:
		return nil
	case msg != "" && ours && shown.Status == corev1.ConditionTrue && shown.Message == msg:
		return nil
	}
	if msg != "" {
		h.recorder.Event(f, v1.EventType(v1.ReasonAddressOnAnotherNetwork), v1.ReasonAddressOnAnotherNetwork, msg)
	}
	_, err := status.UpdateFloatingIP(h.fips, f, func(s *v1.FloatingIPStatus) {
		if msg != "" {
			v1.SetCondition(s, v1.Warning, true, v1.ReasonAddressOnAnotherNetwork, msg)
			return
		}
		s.Conditions = slices.DeleteFunc(s.Conditions, func(c genericcondition.GenericCondition) bool {
			return c.Type == string(v1.Warning) && c.Reason == v1.ReasonAddressOnAnotherNetwork
		})
	})
	if err != nil {
		return fmt.Errorf("showing the network of FloatingIP %s/%s: %w", f.Namespace, f.Name, err)
	}
	return nil
}

// otherNetwork says why f's address, or the one it waits for, is of a range that surely names
// another network than n (harvester.Network.Differs); empty when it is not.
func (h *handler) otherNetwork(f *v1.FloatingIP, n harvester.Network) string {
	rangeName, held := f.Status.Range, f.Status.IPAddress != "" && f.Status.Range != ""
	if !held {
		rangeName = f.Annotations[v1.AnnotationFloatingIPRange]
	}
	if rangeName == "" {
		return ""
	}
	r, err := h.ranges.Cache().Get(rangeName)
	if err != nil {
		return ""
	}
	named := strings.TrimSpace(r.Annotations[v1.AnnotationHarvesterNetworkName])
	if !n.Differs(named) {
		return ""
	}
	what := fmt.Sprintf("holds %s of FloatingIPRange %s", f.Status.IPAddress, rangeName)
	if !held {
		what = "waits for an address of FloatingIPRange " + rangeName
	}
	return fmt.Sprintf("it %s, annotated harvesterNetworkName=%s, but the guest cluster's control-plane pool is on network %s: "+
		"kube-vip cannot serve an address of another network there. It is kept, not moved; to change it, create a FloatingIPRange "+
		"of that network and delete this FloatingIP, which discovery then makes again from the new range",
		what, redact.Shorten(named, harvester.MaxQuoted), redact.Shorten(n.String(), harvester.MaxQuoted))
}
