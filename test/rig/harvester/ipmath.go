package harvester

import (
	"fmt"
	"math/big"
	"net/netip"
)

// poolTotal is how many addresses an LB pool's ranges hold, as load-balancer-harvester v1.8.2's
// allocator counts them (pkg/ipam/allocator.go MakeRange and countIP): each range from rangeStart
// (default: the subnet's first host) to rangeEnd (default: its last, the broadcast address left
// out for IPv4), less one when the gateway (default: the first host) falls inside; a /32 is its
// one address.
func poolTotal(ranges []Range) (int64, error) {
	if len(ranges) == 0 {
		return 0, fmt.Errorf("range can't be empty")
	}
	var total int64
	for _, r := range ranges {
		n, err := rangeCount(r)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func rangeCount(r Range) (int64, error) {
	prefix, err := netip.ParsePrefix(r.Subnet)
	if err != nil {
		return 0, fmt.Errorf("invalid subnet %s: %w", r.Subnet, err)
	}
	network := prefix.Masked().Addr()
	var start, end, gateway netip.Addr
	if network.Is4() && prefix.Bits() == 32 {
		// A point-to-point subnet: its one address, no gateway.
		start, end = prefix.Addr(), prefix.Addr()
	} else {
		start, gateway = network.Next(), network.Next()
		end = lastAddr(prefix)
		if network.Is4() {
			end = end.Prev()
		}
	}
	for _, field := range []struct {
		text string
		to   *netip.Addr
	}{{r.RangeStart, &start}, {r.RangeEnd, &end}, {r.Gateway, &gateway}} {
		if field.text == "" {
			continue
		}
		ip, err := netip.ParseAddr(field.text)
		if err != nil || !prefix.Contains(ip) {
			return 0, fmt.Errorf("%s is not an address of %s", field.text, r.Subnet)
		}
		*field.to = ip
	}
	if start.Compare(end) > 0 {
		start, end = end, start
	}
	count := new(big.Int).Sub(addrInt(end), addrInt(start))
	count.Add(count, big.NewInt(1))
	if gateway.IsValid() && gateway.Compare(start) >= 0 && gateway.Compare(end) <= 0 {
		count.Sub(count, big.NewInt(1))
	}
	return count.Int64(), nil
}

// lastAddr is the last address of prefix: its broadcast address for IPv4.
func lastAddr(prefix netip.Prefix) netip.Addr {
	b := prefix.Masked().Addr().AsSlice()
	bits := prefix.Bits()
	for i := range b {
		for j := 0; j < 8; j++ {
			if i*8+j >= bits {
				b[i] |= 0x80 >> j
			}
		}
	}
	addr, _ := netip.AddrFromSlice(b)
	return addr
}

func addrInt(a netip.Addr) *big.Int { return new(big.Int).SetBytes(a.AsSlice()) }

// compareIPs orders two addresses as numbers; text that is no address sorts first.
func compareIPs(a, b string) int {
	x, errX := netip.ParseAddr(a)
	y, errY := netip.ParseAddr(b)
	switch {
	case errX != nil && errY != nil:
		return 0
	case errX != nil:
		return -1
	case errY != nil:
		return 1
	}
	return x.Compare(y)
}

// inRange reports whether ip lies in start..end, as vm-dhcp-controller's IsIPInBetweenOf does;
// text that is no address is in no range.
func inRange(ip, start, end string) bool {
	x, err1 := netip.ParseAddr(ip)
	s, err2 := netip.ParseAddr(start)
	e, err3 := netip.ParseAddr(end)
	return err1 == nil && err2 == nil && err3 == nil && x.Compare(s) >= 0 && x.Compare(e) <= 0
}

// rangeSize is how many addresses start..end holds, 0 when either is no address or end is below
// start.
func rangeSize(start, end string) int {
	s, err1 := netip.ParseAddr(start)
	e, err2 := netip.ParseAddr(end)
	if err1 != nil || err2 != nil || s.Compare(e) > 0 {
		return 0
	}
	return int(new(big.Int).Sub(addrInt(e), addrInt(s)).Int64()) + 1
}
