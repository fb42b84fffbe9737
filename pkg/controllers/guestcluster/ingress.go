package guestcluster

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
)

// ingressAddresses are the addresses of the cluster's FloatingIPs whose range puts the guest's
// ingress controller on them (spec.ingress): global ones only, as the Service lives in kube-system.
func (c *controller) ingressAddresses(members []*pass) []netip.Addr {
	var out []netip.Addr
	for _, m := range members {
		if _, named := m.fip.Annotations[v1.AnnotationGuestNamespace]; named {
			continue
		}
		addr, ok := c.heldAddress(m.fip)
		if !ok {
			continue
		}
		if r, err := c.Ranges.Get(m.fip.Status.Range); err == nil && r.Spec.Ingress {
			out = append(out, addr)
		}
	}
	return out
}

// onePerFamily keeps the first address of each family, in order.
func onePerFamily(addrs []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		if !slices.ContainsFunc(out, func(b netip.Addr) bool { return b.Is4() == a.Is4() }) {
			out = append(out, a)
		}
	}
	return out
}

// ingress keeps the operator's ingress Service in the guest as the cluster's FloatingIPs' ranges
// and its label ask (v1.LabelIngress: "true" all its global addresses, "false" none); when
// nothing asks, takeOutIngress takes it out once the guest is observed. p.ingress is what the
// FloatingIPs whose address it carries show.
func (c *controller) ingress(ctx context.Context, client guestAPI, p *pass, clusterLabelSet map[string]string) {
	addrs := p.ingressAddrs
	if v, labelled := clusterLabelSet[v1.LabelIngress]; labelled {
		if on, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil && on {
			addrs = p.want.Global
		} else if err == nil {
			addrs = nil
		}
	}
	p.ingressAddrs = onePerFamily(addrs)
	if len(p.ingressAddrs) == 0 {
		return
	}
	res, why, err := client.EnsureIngress(ctx, p.ingressAddrs)
	switch {
	case err != nil:
		p.ingress = &outcome{reason: v1.ReasonIngressFailed, message: err.Error()}
	case why != "":
		p.ingress = &outcome{reason: v1.ReasonIngressNoController, message: why + "; " + addrsText(p.ingressAddrs) + " is not put on an ingress controller"}
	default:
		p.ingress = &outcome{reason: v1.ReasonIngressPending, message: fmt.Sprintf("the Service %s/%s (%s) asks for %s on ports 80 and 443; it does not hold it yet",
			kubevipconfig.IngressNamespace, kubevipconfig.IngressServiceName, res, addrsText(p.ingressAddrs))}
	}
}

// takeOutIngress takes the operator's ingress Service out of a guest that asks for none, where
// what the pass observed shows one, or cannot tell (no look, or one cut short by a limit). The
// cluster's watch already holds every kube-vip Service, so a guest that never opted in costs no
// request of its own for it.
func (c *controller) takeOutIngress(ctx context.Context, client guestAPI, p *pass) {
	if len(p.ingressAddrs) > 0 || (p.serving != nil && p.serving.Limited == "" && !p.serving.Ingress) {
		return
	}
	if removed, err := client.RemoveIngress(ctx); err != nil {
		logrus.Warnf("guest cluster %s: %s", p.cluster, p.redact(err.Error()))
	} else if removed {
		logrus.Infof("guest cluster %s: removed the Service %s/%s, as nothing asks for it", p.cluster, kubevipconfig.IngressNamespace, kubevipconfig.IngressServiceName)
	}
}

// ingressServed turns a pending p.ingress into served when what the guest showed of what serves
// its addresses has the ingress Service holding all of them.
func (p *pass) ingressServed() {
	if p.ingress == nil || p.ingress.reason != v1.ReasonIngressPending || p.serving == nil {
		return
	}
	for _, s := range p.serving.Services {
		if s.Namespace != kubevipconfig.IngressNamespace || s.Name != kubevipconfig.IngressServiceName {
			continue
		}
		for _, a := range p.ingressAddrs {
			if !slices.Contains(s.Holds, a) {
				return
			}
		}
		p.ingress = &outcome{ok: true, reason: v1.ReasonIngressServed, message: fmt.Sprintf(
			"the guest's ingress controller answers on %s, ports 80 and 443: the Service %s/%s holds it", addrsText(p.ingressAddrs), s.Namespace, s.Name)}
		return
	}
}

func addrsText(addrs []netip.Addr) string {
	texts := make([]string, 0, len(addrs))
	for _, a := range addrs {
		texts = append(texts, a.String())
	}
	return strings.Join(texts, ", ")
}
