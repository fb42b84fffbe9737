package guestcluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

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

// syncKept is the pass of the guest cluster whose management cluster (and namespace) is ns when
// none of its FloatingIPs is left: while addresses are kept for it, the pass asks the guest about
// those alone and settles them as every pass does (settleKept), so that an address no Service
// serves any more goes back to its range without waiting out servedAddressHold, and a range being
// deleted is not held up by it. It writes nothing to the guest, no FloatingIP shows it and it sets
// no metric; its Events go to the ranges. With nothing kept, the cluster's watch stops.
func (c *controller) syncKept(ctx context.Context, ns string) (time.Duration, error) {
	// The cluster's series go with its last FloatingIP; a pass over kept addresses sets none.
	c.pruneMetrics()
	prov := c.provisioningOf(ns)
	var kept []allocation.Kept
	if prov != nil {
		kept = c.Alloc.RetainedFor(v1.ClusterReference{Namespace: c.opts.FleetNamespace, Name: prov.Name})
	}
	if len(kept) == 0 {
		c.watches.Stop(ns)
		return 0, nil
	}
	p := &pass{prov: prov, cluster: prov.Name}
	err := c.runSafely(ctx, p, func(ctx context.Context) error {
		_, client, err := c.reach(ctx, ns, p)
		if client == nil {
			return err
		}
		readServing(ctx, client, p, nil, c.keptOf(p))
		c.settleKept(p)
		return nil
	})
	if p.serving == nil {
		c.watches.Stop(ns)
	}
	if err != nil {
		if p.guest.message != "" {
			logrus.Debugf("guest cluster %s, kept addresses: %s", p.cluster, p.redact(p.guest.message))
		}
		return 0, err
	}
	return c.Store.Get().OperateGuestClusterInterval, nil
}

// provisioningOf is the provisioning cluster whose management cluster is ns, nil when the cache
// has none.
func (c *controller) provisioningOf(ns string) *provv1.Cluster {
	all, err := c.Provisioning.Cache().List(c.opts.FleetNamespace, labels.Everything())
	if err != nil {
		return nil
	}
	for _, prov := range all {
		if prov.Status.ClusterName == ns {
			return prov
		}
	}
	return nil
}

// keptClusters are the management clusters of the provisioning clusters that have addresses
// kept, for the passes queued at start and at a change of configuration.
func (c *controller) keptClusters() []string {
	all, err := c.Provisioning.Cache().List(c.opts.FleetNamespace, labels.Everything())
	if err != nil {
		return nil
	}
	var out []string
	for _, prov := range all {
		if prov.Status.ClusterName != "" && len(c.Alloc.RetainedFor(v1.ClusterReference{Namespace: c.opts.FleetNamespace, Name: prov.Name})) > 0 {
			out = append(out, prov.Status.ClusterName)
		}
	}
	return out
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
				c.keptReleased(p, k)
			}
		}
	}
}

// keptReleased records the Event of kept address k going back to its range: on the FloatingIP
// that led the pass, or, in a pass without one (syncKept), on the range.
func (c *controller) keptReleased(p *pass, k allocation.Kept) {
	var on runtime.Object = p.fip
	if p.fip == nil {
		r, err := c.Ranges.Get(k.Range)
		if err != nil {
			return
		}
		on = r
	}
	c.Recorder.Event(on, v1.EventType(v1.ReasonKeptAddressReleased), v1.ReasonKeptAddressReleased, fmt.Sprintf(
		"guest cluster %s: no Service asks for or holds %s any more, which FloatingIP %s/%s gave up: it went back to FloatingIPRange %s",
		p.cluster, k.Addr, k.Last.Namespace, k.Last.Name, k.Range))
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
