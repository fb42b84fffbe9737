package guestcluster

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// keptAddresses are the allocation manager's addresses retained for a guest cluster: those its
// FloatingIPs gave up while its Services may serve them, and those its retention keeps.
type keptAddresses interface {
	RetainedFor(cluster v1.ClusterReference) []allocation.Kept
	Renew(k allocation.Kept, until time.Time, servedBy string) error
	ReleaseKept(k allocation.Kept) error
}

// keptOf is the cluster's kept addresses, read from the allocation index when the pass asks the
// guest what serves its addresses: observe asks about these too.
func (c *controller) keptOf(p *pass) []netip.Addr {
	p.kept = c.Alloc.RetainedFor(c.clusterRef(p))
	out := make([]netip.Addr, 0, len(p.kept))
	for _, k := range p.kept {
		out = append(out, k.Addr)
	}
	return out
}

// clusterRef is the provisioning cluster of the pass's guest.
func (c *controller) clusterRef(p *pass) v1.ClusterReference {
	return v1.ClusterReference{Namespace: c.opts.FleetNamespace, Name: p.cluster}
}

// settleKept judges each kept address by what the pass read of the guest's Services. One a
// Service asks for or holds stays, and is kept for servedAddressHold from now once less than half
// of it is left (or the Services serving it changed), so that an idle guest costs no write per
// pass. One kept while served that no Service asks for or holds, the read complete, goes back to
// its range. A read that failed or stopped short changes nothing: the time runs. Every write is
// guarded by the version the index had, so an address taken back meanwhile is left as it is.
func (c *controller) settleKept(p *pass) {
	if p.serving == nil || len(p.kept) == 0 {
		return
	}
	hold := c.Store.Get().ServedAddressHold
	now := time.Now()
	for _, k := range p.kept {
		by := servingServices(*p.serving, k.Addr)
		switch {
		case by != "":
			if hold <= 0 || k.Until.Sub(now) >= hold/2 && by == k.ServedBy {
				continue
			}
			until := now.Add(hold)
			if until.Before(k.Until) {
				until = k.Until // a longer retention is never shortened
			}
			if err := c.Alloc.Renew(k, until, by); err != nil && !errors.Is(err, allocation.ErrKeptChanged) {
				logrus.Warnf("guest cluster %s: %s", p.cluster, p.redact(err.Error()))
			}
		case p.serving.Limited != "" || !k.WhileServed:
			// Not read in full, or kept for the cluster's return: its time runs.
		default:
			err := c.Alloc.ReleaseKept(k)
			switch {
			case errors.Is(err, allocation.ErrKeptChanged):
			case err != nil:
				logrus.Warnf("guest cluster %s: %s", p.cluster, p.redact(err.Error()))
			default:
				c.Recorder.Event(p.fip, v1.EventType(v1.ReasonKeptAddressReleased), v1.ReasonKeptAddressReleased, fmt.Sprintf(
					"guest cluster %s: no Service asks for or holds %s any more, which FloatingIP %s/%s gave up: it went back to FloatingIPRange %s",
					p.cluster, k.Addr, k.Last.Namespace, k.Last.Name, k.Range))
			}
		}
	}
}

// servingServices names the Services of s that ask for or hold addr, "" when none does.
func servingServices(s kubevipconfig.Serving, addr netip.Addr) string {
	var names []string
	for _, svc := range s.Services {
		if slices.Contains(svc.Holds, addr) || slices.Contains(svc.Asks, addr) {
			names = append(names, svc.String())
		}
	}
	return redact.Names(names, maxServedBy)
}

// keptShown is what the cluster's FloatingIPs show of its kept addresses: the index as it is
// after the pass, whether or not the pass reached the guest.
func (c *controller) keptShown(p *pass) []v1.KeptAddress {
	var out []v1.KeptAddress
	for _, k := range c.Alloc.RetainedFor(c.clusterRef(p)) {
		out = append(out, v1.KeptAddress{Address: k.Addr.String(), Range: k.Range, Allocation: k.Allocation,
			Until: metav1.NewTime(k.Until), WhileServed: k.WhileServed, ServedBy: k.ServedBy})
	}
	return out
}
