package admission

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"go4.org/netipx"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvesterview"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
	"github.com/kubefip/kube-fip-operator/pkg/segments"
)

// HarvesterReader reads a Harvester cluster by the name a range gives it; the webhook asks for its
// networks and pools, not its VMs.
type HarvesterReader interface {
	Read(ctx context.Context, display string, withVMs bool) (*segments.View, error)
}

// harvesterReadTime bounds the webhook's read of a Harvester cluster, well inside the API
// server's wait for the webhook: an answer without the check beats a refused apply.
const harvesterReadTime = 5 * time.Second

// onTheWire judges a range created or edited against its Harvester cluster: it must share no
// address with a load balancer or DHCP pool of its layer-2 segment, nor with a range of another
// network name on that segment. A global load balancer pool, which may hand out on any segment, is
// a warning. A cluster that cannot be read, or a network it does not have, is a warning and the
// range is let through: the controller says on the range what it finds later. Only what the edit
// adds is refused: a claim the range already overlapped before is the controller's to report.
func (v *Validator) onTheWire(r, old *v1.FloatingIPRange, all []v1.FloatingIPRange) verdict {
	display := strings.TrimSpace(r.Annotations[v1.AnnotationHarvesterClusterName])
	named := strings.TrimSpace(r.Annotations[v1.AnnotationHarvesterNetworkName])
	pfx, err := netip.ParsePrefix(r.Spec.IPRange)
	if v.deps.Harvester == nil || display == "" || named == "" || err != nil {
		return allow()
	}
	ctx, cancel := context.WithTimeout(context.Background(), harvesterReadTime)
	defer cancel()
	view, err := v.deps.Harvester.Read(ctx, display, false)
	if err != nil {
		return allow(fmt.Sprintf("Harvester cluster %s could not be read (%s): overlap with its load balancer and DHCP pools was not checked; the range's Warning condition says what is found later",
			redact.Quote(display, redact.MaxValue), redact.Shorten(err.Error(), redact.MaxValue)))
	}
	n, found, why := view.NetworkNamed(named)
	if !found {
		return allow(fmt.Sprintf("harvesterNetworkName %s: %s; overlap with Harvester's pools on the network was not checked", redact.Quote(named, redact.MaxValue), why))
	}
	others := make([]*v1.FloatingIPRange, 0, len(all))
	for i := range all {
		others = append(others, &all[i])
	}
	for _, o := range harvesterview.OnSegment(r, n.Segment, view, others) {
		if old == nil || !contains(harvesterview.OnSegment(old, n.Segment, view, []*v1.FloatingIPRange{o}), o) {
			return refuse("FloatingIPRange %s (%s, network %s) overlaps FloatingIPRange %s (%s, network %s): both networks are the same layer-2 segment of Harvester cluster %s (%s), so they are one address space on the wire; change one of them so that no address is in both",
				r.Name, r.Spec.IPRange, redact.Quote(named, redact.MaxValue), o.Name, o.Spec.IPRange,
				redact.Quote(o.Annotations[v1.AnnotationHarvesterNetworkName], redact.MaxValue), redact.Quote(display, redact.MaxValue), n.Segment)
		}
	}
	whole := netipx.RangeOfPrefix(pfx.Masked())
	var warnings []string
	for _, c := range view.Overlapping(n.Segment, whole.From(), whole.To()) {
		if before(old, view, n.Segment, c) {
			continue
		}
		run := fmt.Sprintf("%s-%s", c.First, c.Last)
		switch c.Kind {
		case segments.KindLoadBalancerPool, segments.KindDHCPPool:
			what := "load balancer"
			if c.Kind == segments.KindDHCPPool {
				what = "DHCP"
			}
			return refuse("FloatingIPRange %s (%s) overlaps the %s %s (%s) on network %s of Harvester cluster %s: Harvester hands out those addresses on the same segment; keep the range clear of it, with spec.iprange or spec.exclude",
				r.Name, r.Spec.IPRange, what, c.Object, run, n.Namespace+"/"+n.Name, redact.Quote(display, redact.MaxValue))
		case segments.KindGlobalLoadBalancerPool:
			warnings = append(warnings, fmt.Sprintf("the global load balancer %s of Harvester cluster %s (%s) may hand out addresses of this range on any network: they are held back, and the range's Warning condition names them",
				c.Object, redact.Quote(display, redact.MaxValue), run))
		}
	}
	return allow(warnings...)
}

// before tells whether old, the range before the edit, already overlapped claim c.
func before(old *v1.FloatingIPRange, view *segments.View, seg segments.Segment, c segments.Claim) bool {
	if old == nil {
		return false
	}
	pfx, err := netip.ParsePrefix(old.Spec.IPRange)
	if err != nil {
		return false
	}
	whole := netipx.RangeOfPrefix(pfx.Masked())
	for _, o := range view.Overlapping(seg, whole.From(), whole.To()) {
		if o.Kind == c.Kind && o.Object == c.Object && o.First == c.First && o.Last == c.Last {
			return true
		}
	}
	return false
}

// contains tells whether list holds r.
func contains(list []*v1.FloatingIPRange, r *v1.FloatingIPRange) bool {
	for _, o := range list {
		if o.Name == r.Name {
			return true
		}
	}
	return false
}
