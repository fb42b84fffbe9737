package harvesterview

import (
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"strings"

	"go4.org/netipx"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
	"github.com/kubefip/kube-fip-operator/pkg/segments"
)

// maxNamed bounds the claims a message names: enough for the pools and VMs of one segment in
// most clusters, few enough for a condition a person reads.
const maxNamed = 10

// Judgement is what a range's Harvester cluster means for it.
type Judgement struct {
	// Network is the range's network as Harvester has it; known says whether it was found.
	Network segments.Network
	Known   bool
	// Withheld are the range's addresses Harvester hands out or uses on its segment.
	Withheld *netipx.IPSet
	// Warnings are for the range's Warning condition.
	Warnings []problem.Problem
	// InUse are, by address, the range's held addresses a virtual machine of another guest (or
	// of none) reports on the segment, with what reports it.
	InUse map[netip.Addr]string
}

// Holder is who holds one of the range's addresses: the namespace of its FloatingIP, which is its
// guest cluster's management cluster id.
type Holder struct {
	Namespace string
}

// Judge judges range r against entry e of its Harvester cluster (ok false: not read yet). holders
// are the range's held addresses; guestNamespace maps a guest cluster's name (a VM's label) to the
// namespace of its FloatingIPs, "" when unknown.
func Judge(r *v1.FloatingIPRange, e Entry, ok bool, holders map[netip.Addr]Holder, guestNamespace func(guest string) string) Judgement {
	var j Judgement
	display := strings.TrimSpace(r.Annotations[v1.AnnotationHarvesterClusterName])
	named := strings.TrimSpace(r.Annotations[v1.AnnotationHarvesterNetworkName])
	pfx, err := netip.ParsePrefix(r.Spec.IPRange)
	if !ok || display == "" || named == "" || err != nil {
		return j
	}
	if e.View == nil {
		j.Warnings = append(j.Warnings, *problem.New(v1.ReasonHarvesterNotRead,
			"Harvester cluster %s cannot be read (%s): conflicts with its load balancer and DHCP pools and its VMs' addresses are not known; allocation goes on",
			redact.Quote(display, redact.MaxValue), e.Err))
		return j
	}
	if e.Err != "" {
		j.Warnings = append(j.Warnings, *problem.New(v1.ReasonHarvesterNotRead,
			"Harvester cluster %s cannot be read now (%s); its last view is used, so a pool or VM address that came since is not known",
			redact.Quote(display, redact.MaxValue), e.Err))
	}
	if e.View.Limited != "" {
		j.Warnings = append(j.Warnings, *problem.New(v1.ReasonHarvesterNotRead,
			"the read of Harvester cluster %s was cut short (%s): conflicts beyond what was read are not known", redact.Quote(display, redact.MaxValue), e.View.Limited))
	}
	n, found, why := e.View.NetworkNamed(named)
	if !found {
		j.Warnings = append(j.Warnings, *problem.New(v1.ReasonNetworkNotFound,
			"harvesterNetworkName %s: %s; the name as written is the range's address space, and only Harvester's global load balancer pool is checked", redact.Quote(named, redact.MaxValue), why))
	}
	j.Network, j.Known = n, found
	whole := netipx.RangeOfPrefix(pfx.Masked())
	claims := e.View.Overlapping(n.Segment, whole.From(), whole.To())
	if !found {
		claims = slices.DeleteFunc(claims, func(c segments.Claim) bool { return c.Kind != segments.KindGlobalLoadBalancerPool })
	}
	var withheld netipx.IPSetBuilder
	var claimed []string
	for _, c := range claims {
		run := clip(c, whole)
		if c.Kind == segments.KindVM {
			if h, held := holders[c.First]; held {
				if own := guestNamespace(c.Guest); own != "" && own == h.Namespace {
					continue // the guest's own node announcing its floating IP
				}
				if j.InUse == nil {
					j.InUse = map[netip.Addr]string{}
				}
				j.InUse[c.First] = describe(c)
			}
		}
		withheld.AddRange(run)
		claimed = append(claimed, describe(c)+" "+runText(run))
	}
	j.Withheld, _ = withheld.IPSet()
	if len(claimed) > 0 {
		j.Warnings = append(j.Warnings, *problem.New(v1.ReasonHarvesterClaims,
			"Harvester cluster %s hands out or uses %s on %s, which this range holds back: %s",
			redact.Quote(display, redact.MaxValue), count(j.Withheld), n.Segment, redact.Names(claimed, maxNamed)))
	}
	return j
}

// clip is the part of c inside whole.
func clip(c segments.Claim, whole netipx.IPRange) netipx.IPRange {
	from, to := c.First, c.Last
	if from.Less(whole.From()) {
		from = whole.From()
	}
	if whole.To().Less(to) {
		to = whole.To()
	}
	return netipx.IPRangeFrom(from, to)
}

// describe names what makes a claim.
func describe(c segments.Claim) string {
	switch c.Kind {
	case segments.KindLoadBalancerPool:
		return "load balancer " + c.Object
	case segments.KindGlobalLoadBalancerPool:
		return "global load balancer " + c.Object
	case segments.KindDHCPPool:
		return "DHCP " + c.Object
	case segments.KindVM:
		if c.Guest != "" {
			return fmt.Sprintf("%s of guest cluster %s", c.Object, redact.Quote(c.Guest, redact.MaxValue))
		}
		return c.Object
	}
	return c.Object
}

// runText is a run of addresses as a person writes it.
func runText(r netipx.IPRange) string {
	if r.From() == r.To() {
		return "(" + r.From().String() + ")"
	}
	return "(" + r.From().String() + "-" + r.To().String() + ")"
}

// count says how many addresses set has, in words.
func count(set *netipx.IPSet) string {
	n := new(big.Int)
	for _, r := range set.Ranges() {
		a, b := r.From().As16(), r.To().As16()
		span := new(big.Int).Sub(new(big.Int).SetBytes(b[:]), new(big.Int).SetBytes(a[:]))
		n.Add(n, span.Add(span, big.NewInt(1)))
	}
	if n.IsInt64() && n.Int64() == 1 {
		return "1 address"
	}
	return n.String() + " addresses"
}
