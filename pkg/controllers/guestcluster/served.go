package guestcluster

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"time"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// maxServedBy is how many Services a FloatingIP's servedBy and messages name.
const maxServedBy = 5

// served is what the guest shows of one FloatingIP's address: the Served condition, the Services
// that hold it, and since when it has been pending.
type served struct {
	outcome
	by, pendingSince string
	// recheck is when to look again, 0 for the usual interval.
	recheck time.Duration
}

// observe reads, after the addresses are written, what serves them: the operator's own kube-vip
// where it installs one (or the original kube-fip-operator's of the same release, until the
// operator's replaces it), and the Services kube-vip-cloud-provider handles.
func (c *controller) observe(ctx context.Context, client guestAPI, p *pass, cfg config.Config) {
	var kubevip *kubevipconfig.KubevipRef
	if p.installs {
		kubevip = &kubevipconfig.KubevipRef{Namespace: cfg.KubevipNamespace, Name: chartvalues.KubevipNameOverride, Release: cfg.Kubevip.ReleaseName}
	}
	addrs := slices.Clone(p.want.Global)
	for _, ns := range p.want.Namespaced {
		addrs = append(addrs, ns...)
	}
	addrs = append(addrs, c.keptOf(p)...)
	readServing(ctx, client, p, kubevip, addrs)
}

// readServing reads what serves addrs into the pass: its serving, or servingErr why not.
func readServing(ctx context.Context, client guestAPI, p *pass, kubevip *kubevipconfig.KubevipRef, addrs []netip.Addr) {
	if s, err := client.Serving(ctx, kubevip, addrs); err != nil {
		p.servingErr = p.redact(err.Error())
	} else {
		p.serving = &s
	}
}

// judgeServed says whether addr is served, as s shows it, for a FloatingIP whose grace period
// started at pendingSince ("" when it was not pending). What has not happened yet is pending for
// grace, then a failure of its own reason; a pass that finds the address pending comes back when
// the grace is over, whatever operateGuestClusterInterval says.
func judgeServed(s kubevipconfig.Serving, addr netip.Addr, pendingSince string, now time.Time, grace time.Duration) served {
	since, err := time.Parse(time.RFC3339, pendingSince)
	if err != nil || since.After(now) {
		since = now
	}
	left := grace - now.Sub(since)
	notYet := func(reason, why string) served {
		out := served{pendingSince: since.UTC().Format(time.RFC3339)}
		if left > 0 {
			out.outcome = outcome{reason: v1.ReasonServePending, message: fmt.Sprintf("%s; kube-vip is given until %s", why, since.Add(grace).UTC().Format(time.RFC3339))}
			out.recheck = left + time.Second
			return out
		}
		out.outcome = outcome{reason: reason, message: fmt.Sprintf("%s, for longer than %s", why, grace)}
		return out
	}
	kubevip := ""
	if k := s.Kubevip; k != nil {
		where := k.Namespace + "/" + k.Name
		switch {
		case !k.Found:
			return served{outcome: outcome{reason: v1.ReasonKubevipMissing, message: fmt.Sprintf("kube-vip's DaemonSet %s is not in the guest", where)}}
		case !k.Observed:
			return notYet(v1.ReasonKubevipNotReady, fmt.Sprintf("kube-vip's DaemonSet %s is being rolled out", where))
		case k.Desired == 0:
			return served{outcome: outcome{reason: v1.ReasonKubevipNotScheduled, message: fmt.Sprintf(
				"kube-vip's DaemonSet %s schedules no pod: its nodeSelector and tolerations match none of the guest's nodes", where)}}
		case k.Ready == 0:
			why := fmt.Sprintf("none of the %d pods of kube-vip's DaemonSet %s is ready", k.Desired, where)
			if k.Why != "" {
				why += " (" + k.Why + ")"
			}
			return notYet(v1.ReasonKubevipNotReady, why)
		}
		kubevip = fmt.Sprintf("; kube-vip %s has %d of %d pods ready", where, k.Ready, k.Desired)
	}
	var asking, holding []string
	for _, svc := range s.Services {
		if slices.Contains(svc.Holds, addr) {
			holding = append(holding, svc.String())
		} else if slices.Contains(svc.Asks, addr) {
			asking = append(asking, svc.String())
		}
	}
	switch {
	case len(holding) > 0:
		by := redact.Names(holding, maxServedBy)
		return served{outcome: outcome{ok: true, reason: v1.ReasonServed, message: fmt.Sprintf("%s is served: the status of %s holds it%s", addr, by, kubevip)}, by: by}
	case s.Limited != "":
		// A Service the read did not reach may hold the address, or ask for it.
		return served{outcome: outcome{reason: v1.ReasonServedReadLimited, message: fmt.Sprintf("no kube-vip Service read holds %s, and the read stopped short: %s", addr, s.Limited)}}
	case len(asking) == 0:
		return served{outcome: outcome{ok: true, reason: v1.ReasonIdle, message: fmt.Sprintf("no LoadBalancer Service asks for %s yet%s", addr, kubevip)}}
	}
	return notYet(v1.ReasonNotServed, fmt.Sprintf("%s asks for %s and no Service's status holds it: no kube-vip announced it%s", redact.Names(asking, maxServedBy), addr, kubevip))
}

// servedOf judges m's address from what the pass read, or nil when the pass did not get that far.
func (p *pass) servedOf(m *pass, addr netip.Addr, ok bool, now time.Time, grace time.Duration) *served {
	switch {
	case !ok || p.state != v1.GuestStateConfigured:
		return nil
	case p.serving == nil && p.servingErr != "":
		return &served{outcome: outcome{reason: v1.ReasonServedUnknown, message: "what serves the address could not be read: " + p.servingErr}}
	case p.serving == nil:
		return nil
	}
	s := judgeServed(*p.serving, addr, m.fip.Status.ServePendingSince, now, grace)
	return &s
}
