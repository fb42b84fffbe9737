package floatingiprange

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"github.com/rancher/wrangler/v2/pkg/genericcondition"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/controllers"
	provcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io/v1"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/harvesterview"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
	"github.com/kubefip/kube-fip-operator/pkg/status"
)

// onTheWire is what r's Harvester cluster means for it on the VM network: the addresses withheld
// from its pool (set before the pass reads the pool), its warnings, the problem of overlapping an
// older range of another name on its layer-2 segment, and the FloatingIPs whose address another VM
// reports. Nothing when the operator reads no Harvester cluster.
func (h *handler) onTheWire(r *v1.FloatingIPRange) (harvesterview.Judgement, *problem.Problem) {
	display := harvesterClusterOf(r)
	if h.views == nil || display == "" {
		return harvesterview.Judgement{}, nil
	}
	e, ok := h.views.Get(display)
	holders := map[netip.Addr]harvesterview.Holder{}
	for _, o := range h.alloc.Holders(r) {
		if a, err := netip.ParseAddr(o.Addr); err == nil {
			holders[a] = harvesterview.Holder{Namespace: o.Allocation.Namespace}
		}
	}
	j := harvesterview.Judge(r, e, ok, holders, h.guestNamespace)
	h.alloc.Withhold(r.Name, j.Withheld)
	if !j.Known {
		return j, nil
	}
	others, err := h.ranges.Cache().GetByIndex(rangeByHarvesterCluster, display)
	if err != nil {
		return j, nil
	}
	for _, o := range harvesterview.OnSegment(r, j.Network.Segment, e.View, others) {
		if harvesterview.Older(o, r) {
			return j, problem.New(v1.ReasonOverlap,
				"FloatingIPRange %s (%s, network %s) is on the same layer-2 segment (%s) and older, and shares addresses with this range (network %s): two names of one segment are one address space on the wire",
				o.Name, o.Spec.IPRange, redact.Quote(o.Annotations[v1.AnnotationHarvesterNetworkName], redact.MaxValue), j.Network.Segment,
				redact.Quote(r.Annotations[v1.AnnotationHarvesterNetworkName], redact.MaxValue))
		}
	}
	return j, nil
}

// importedHarvester finds the provisioning cluster of an imported Harvester cluster by its
// display name: Rancher names it so, but a cluster imported before Rancher's provisioning
// clusters has one named by its management cluster's id (Rancher's
// generateProvisioningClusterFromLegacyCluster), found through the management clusters of that
// display name.
func (h *handler) importedHarvester(clusters provcontrollers.ClusterCache) harvesterview.ClusterGetter {
	return func(namespace, display string) (*provv1.Cluster, error) {
		c, err := clusters.Get(namespace, display)
		if !apierrors.IsNotFound(err) || h.harvesters == nil || h.harvesters.clusters == nil {
			return c, err
		}
		known, _ := h.harvesters.clusters.GetByIndex(managementByDisplayName, display)
		for _, m := range known {
			if legacy, lerr := clusters.Get(namespace, m.Name); lerr == nil {
				return legacy, nil
			}
		}
		return nil, err
	}
}

// guestNamespace is the namespace of the FloatingIPs of the guest cluster whose provisioning
// cluster is named guest: its management cluster id; "" when not known.
func (h *handler) guestNamespace(guest string) string {
	if guest == "" || h.selectors == nil || h.selectors.clusters == nil {
		return ""
	}
	c, err := h.selectors.clusters.Cache().Get(h.selectors.fleet, guest)
	if err != nil {
		return ""
	}
	return c.Status.ClusterName
}

// showInUse shows on each FloatingIP holding an address of r whether a VM of another guest
// reports it (j.InUse): Warning=True with reason AddressInUseOnNetwork and a Warning Event when it
// turns so, and no such Warning once it no longer is. The address is kept: which host should keep
// it is a person's choice. A FloatingIP showing another warning keeps that one; the range's
// kubefipoperator_fipranges_in_use_elsewhere still counts it.
func (h *handler) showInUse(r *v1.FloatingIPRange, j harvesterview.Judgement) {
	h.metrics.RangeInUse.WithLabelValues(r.Name).Set(float64(len(j.InUse)))
	if j.Withheld != nil {
		h.metrics.RangeWithheld.WithLabelValues(r.Name).Set(float64(countOf(j)))
	} else {
		h.metrics.RangeWithheld.WithLabelValues(r.Name).Set(0)
	}
	for _, o := range h.alloc.Holders(r) {
		f, err := h.fips.Cache().Get(o.Allocation.Namespace, o.Allocation.Name)
		if err != nil || f.DeletionTimestamp != nil {
			continue
		}
		msg := ""
		if a, err := netip.ParseAddr(o.Addr); err == nil && j.InUse[a] != "" {
			msg = fmt.Sprintf("%s is reported on the network of FloatingIPRange %s by %s, which is no node of this guest cluster: two hosts answer for the address. It is kept, not moved",
				a, r.Name, j.InUse[a])
		}
		h.showWarning(f, v1.ReasonAddressInUse, msg)
	}
}

// countOf is how many addresses j withholds, for the metric; a count past what a float holds
// exactly is still the right order of magnitude.
func countOf(j harvesterview.Judgement) float64 {
	var n float64
	for _, r := range j.Withheld.Ranges() {
		a, b := r.From().As16(), r.To().As16()
		var span float64
		for i := range a {
			span = span*256 + float64(b[i]) - float64(a[i])
		}
		n += span + 1
	}
	return n
}

// showWarning brings f's Warning condition of reason in line with msg (empty: none).
func (h *handler) showWarning(f *v1.FloatingIP, reason, msg string) {
	shown, ok := v1.GetCondition(f.Status.Conditions, v1.Warning)
	ours := ok && shown.Reason == reason
	switch {
	case msg == "" && !ours:
		return
	case msg != "" && ours && shown.Status == corev1.ConditionTrue && shown.Message == msg:
		return
	case msg != "" && ok && !ours && shown.Status == corev1.ConditionTrue:
		// Another warning is shown; the range's metric and alert still tell of this one.
		return
	}
	if msg != "" {
		h.recorder.Event(f, v1.EventType(reason), reason, msg)
	}
	_, _ = status.UpdateFloatingIP(h.fips, f, func(s *v1.FloatingIPStatus) {
		if msg != "" {
			v1.SetCondition(s, v1.Warning, true, reason, msg)
			return
		}
		s.Conditions = slices.DeleteFunc(s.Conditions, func(c genericcondition.GenericCondition) bool {
			return c.Type == string(v1.Warning) && c.Reason == reason
		})
	})
}

// harvesterChanged runs the ranges of the Harvester cluster whose view changed.
func (h *handler) harvesterChanged(display string) {
	ranges, err := h.ranges.Cache().GetByIndex(rangeByHarvesterCluster, strings.TrimSpace(display))
	if err != nil {
		return
	}
	for _, r := range ranges {
		h.ranges.Enqueue(r.Name)
	}
}

// namedByRange tells whether a range names the Harvester cluster display.
func (h *handler) namedByRange(display string) bool {
	ranges, err := h.ranges.Cache().GetByIndex(rangeByHarvesterCluster, display)
	return err == nil && len(ranges) > 0
}

// readHarvesters starts reading the Harvester clusters the ranges name, unless the options turn it
// off or the context lacks what reaching them takes (a unit test's).
func (h *handler) readHarvesters(c *controllers.Context) error {
	if c.Harvester.Off() || c.ProvisioningClusters == nil || c.Secrets == nil || c.RestConfig == nil {
		return nil
	}
	dyn, err := dynamic.NewForConfig(c.RestConfig)
	if err != nil {
		return fmt.Errorf("creating the client of Rancher's settings: %w", err)
	}
	reacher := &harvesterview.Reacher{
		Clusters: h.importedHarvester(c.ProvisioningClusters.Cache()), Secrets: c.Secrets, Settings: dyn.Resource(guest.SettingResource()),
		FleetNamespace: c.FleetNamespace, Timeout: cmp.Or(c.Harvester.Timeout, c.Guest.Timeout),
	}
	h.views = harvesterview.New(&harvesterview.Reader{Reacher: reacher, Limits: c.Harvester.Limits}, c.Harvester.Interval, c.Metrics,
		h.namedByRange, h.harvesterChanged)
	c.Harvesters = h.views
	c.OnStart(h.views.Run)
	return nil
}
