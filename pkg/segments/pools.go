package segments

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"

	"go4.org/netipx"
)

const (
	// labelGlobalPool is what load-balancer-harvester's webhook labels a global pool with, and what
	// its Selector.Select goes by (pkg/utils/const.go).
	labelGlobalPool = "loadbalancer.harvesterhci.io/global-ip-pool"
	// scopeAll matches everything in a scope tuple (pkg/ipam/selector.go All).
	scopeAll = "*"
	// defaultDHCPNamespace is where vm-dhcp-controller's webhook (checkNAD) looks for a NAD named
	// without a namespace.
	defaultDHCPNamespace = "default"
)

var (
	errBadRange        = errors.New("a range is malformed")
	errNetworkNotFound = errors.New("the pool's network was not read")
)

// lbPoolObject is what is read of a load balancer IPPool (loadbalancer.harvesterhci.io/v1beta1).
type lbPoolObject struct {
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Ranges []struct {
			Subnet     string `json:"subnet"`
			RangeStart string `json:"rangeStart"`
			RangeEnd   string `json:"rangeEnd"`
			Gateway    string `json:"gateway"`
		} `json:"ranges"`
		Selector struct {
			Network string `json:"network"`
			Scope   []struct {
				Project      string `json:"project"`
				Namespace    string `json:"namespace"`
				GuestCluster string `json:"guestCluster"`
			} `json:"scope"`
		} `json:"selector"`
	} `json:"spec"`
}

// parseLBPool reads one load balancer IPPool into its claims: one per run of addresses its
// allocator may hand out. A pool with any range its allocator refuses is skipped whole, as
// load-balancer-harvester builds no allocator for it (NewAllocator) and hands out nothing.
func parseLBPool(item []byte, segmentOf segmentFunc) ([]Claim, error) {
	var o lbPoolObject
	if err := json.Unmarshal(item, &o); err != nil {
		return nil, err
	}
	if !validNames("", o.Metadata.Name) {
		return nil, errBadName
	}
	if len(o.Spec.Ranges) == 0 {
		return nil, fmt.Errorf("%w: the pool has no ranges", errBadRange)
	}
	base := Claim{Kind: KindLoadBalancerPool, Object: "IPPool " + o.Metadata.Name}
	sel := o.Spec.Selector
	global := o.Metadata.Labels[labelGlobalPool] == "true" || sel.Network == "" ||
		(len(sel.Scope) == 1 && sel.Scope[0].Project == scopeAll && sel.Scope[0].Namespace == scopeAll && sel.Scope[0].GuestCluster == scopeAll)
	if global {
		base.Kind = KindGlobalLoadBalancerPool
	} else {
		// The webhook (GetVid) takes nothing but "namespace/name".
		ref, ok := splitNetwork(sel.Network, "")
		if !ok {
			return nil, fmt.Errorf("%w: spec.selector.network is not namespace/name", errBadRange)
		}
		if base.Segment, ok = segmentOf(ref); !ok {
			// A pool whose network was not read (the list was cut short, or the NAD is gone) may
			// be on any segment, like a global pool: held back, not taken for a certain overlap.
			base.Kind = KindGlobalLoadBalancerPool
			base.Object += notFound(ref)
		}
	}
	var claims []Claim
	for _, r := range o.Spec.Ranges {
		runs, err := lbRuns(r.Subnet, r.RangeStart, r.RangeEnd, r.Gateway)
		if err != nil {
			return nil, err
		}
		for _, run := range runs {
			c := base
			c.First, c.Last = run.From(), run.To()
			claims = append(claims, c)
		}
	}
	return claims, nil
}

// lbRuns is what the CNI host-local allocator hands out of one range as load-balancer-harvester
// v1.8.2 builds it (pkg/ipam/allocator.go MakeRange): rangeStart defaults to the subnet's
// network address + 1, rangeEnd to its last address (less one, the broadcast, for IPv4), the
// gateway to network + 1, and an IPv4 /32 is its one address with no gateway; a start above the
// end is swapped, not refused; and the allocator skips the gateway. So a default IPv4 /24 hands
// out .2 to .254.
func lbRuns(subnet, start, end, gateway string) ([]netipx.IPRange, error) {
	pfx, err := netip.ParsePrefix(subnet)
	if err != nil || pfx.Addr().Is4In6() {
		return nil, fmt.Errorf("%w: the subnet is not a CIDR", errBadRange)
	}
	pfx = pfx.Masked()
	whole := netipx.RangeOfPrefix(pfx)
	network, last := whole.From(), whole.To()
	var defStart, defEnd, defGateway netip.Addr
	if pfx.Addr().Is4() && pfx.Bits() == 32 {
		defStart, defEnd = network, network
	} else {
		defStart, defEnd, defGateway = network.Next(), last, network.Next()
		if pfx.Addr().Is4() {
			defEnd = last.Prev()
		}
	}
	// parseIP in MakeRange: inside the subnet, neither its network nor its last address.
	pick := func(s string, def netip.Addr) (netip.Addr, error) {
		if s == "" {
			return def, nil
		}
		a, ok := parseAddr(s)
		if !ok || !pfx.Contains(a) || a == network || a == last {
			return netip.Addr{}, fmt.Errorf("%w: an address is not a host of the subnet", errBadRange)
		}
		return a, nil
	}
	from, err := pick(start, defStart)
	if err != nil {
		return nil, err
	}
	to, err := pick(end, defEnd)
	if err != nil {
		return nil, err
	}
	gw, err := pick(gateway, defGateway)
	if err != nil {
		return nil, err
	}
	if to.Less(from) {
		from, to = to, from
	}
	// The defaults of an IPv6 /128 or an IPv4 /31 reach past the subnet; the allocator hands
	// out nothing there.
	if from.Less(network) {
		from = network
	}
	if last.Less(to) {
		to = last
	}
	var b netipx.IPSetBuilder
	b.AddRange(netipx.IPRangeFrom(from, to))
	if gw.IsValid() {
		b.Remove(gw)
	}
	set, err := b.IPSet()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadRange, err)
	}
	return set.Ranges(), nil
}

// dhcpPoolObject is what is read of a vm-dhcp-controller IPPool (network.harvesterhci.io/v1alpha1).
type dhcpPoolObject struct {
	Metadata struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		NetworkName string `json:"networkName"`
		IPv4Config  struct {
			CIDR     string `json:"cidr"`
			ServerIP string `json:"serverIP"`
			Router   string `json:"router"`
			Pool     struct {
				Start string `json:"start"`
				End   string `json:"end"`
			} `json:"pool"`
		} `json:"ipv4Config"`
	} `json:"spec"`
}

// parseDHCPPool reads one vm-dhcp-controller IPPool into its claims: the pool's start to end, and
// the DHCP server's and the router's addresses, each on its own. A pool whose network was not
// read is skipped, as one that serves nothing. vm-dhcp-controller v1.8.1 is
// IPv4 only; a pool its IPAM refuses (NewIPSubnet: start above end, end the broadcast, an address
// outside the CIDR) is skipped, as it hands out nothing. Start and end default as its webhook's
// mutator sets them (ensurePoolRange): the network address + 1 and the broadcast - 1.
func parseDHCPPool(item []byte, segmentOf segmentFunc) ([]Claim, error) {
	var o dhcpPoolObject
	if err := json.Unmarshal(item, &o); err != nil {
		return nil, err
	}
	if o.Metadata.Namespace == "" || !validNames(o.Metadata.Namespace, o.Metadata.Name) {
		return nil, errBadName
	}
	ref, ok := splitNetwork(o.Spec.NetworkName, defaultDHCPNamespace)
	if !ok {
		return nil, fmt.Errorf("%w: spec.networkName is not namespace/name", errBadRange)
	}
	c := o.Spec.IPv4Config
	pfx, err := netip.ParsePrefix(c.CIDR)
	if err != nil || !pfx.Addr().Is4() {
		return nil, fmt.Errorf("%w: the cidr is not an IPv4 CIDR", errBadRange)
	}
	pfx = pfx.Masked()
	whole := netipx.RangeOfPrefix(pfx)
	network, broadcast := whole.From(), whole.To()
	// checkPoolRange and friends: an address must be a host of the CIDR.
	host := func(s string, def netip.Addr) (netip.Addr, bool) {
		a, ok := def, true
		if s != "" {
			a, ok = parseAddr(s)
		}
		return a, ok && pfx.Contains(a) && a != network && a != broadcast
	}
	start, ok1 := host(c.Pool.Start, network.Next())
	end, ok2 := host(c.Pool.End, broadcast.Prev())
	if !ok1 || !ok2 || end.Less(start) {
		return nil, fmt.Errorf("%w: the pool is not start to end inside the cidr", errBadRange)
	}
	base := Claim{Kind: KindDHCPPool, Object: "IPPool " + o.Metadata.Namespace + "/" + o.Metadata.Name}
	if base.Segment, ok = segmentOf(ref); !ok {
		// vm-dhcp-controller runs a pool's agent on its NAD's cluster network (DeployAgent), and
		// without the NAD serves nothing.
		return nil, errNetworkNotFound
	}
	pool := base
	pool.First, pool.Last = start, end
	claims := []Claim{pool}
	for _, single := range []struct{ value, what string }{{c.ServerIP, " (DHCP server)"}, {c.Router, " (router)"}} {
		if single.value == "" {
			continue
		}
		a, ok := host(single.value, netip.Addr{})
		if !ok {
			return nil, fmt.Errorf("%w: the server or router is not a host of the cidr", errBadRange)
		}
		s := base
		s.Object += single.what
		s.First, s.Last = a, a
		claims = append(claims, s)
	}
	return claims, nil
}
