package ipam

import (
	"fmt"
	"math/big"
	"net/netip"
	"strings"

	"go4.org/netipx"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// rangeDef is the validated shape of a pool: what may be handed out,
// independent of what currently is. It is never changed in place: a range
// whose definition changes gets a new Pool, which pkg/allocation fills again
// from the allocation objects.
type rangeDef struct {
	prefix netip.Prefix
	// first and last bound the addresses that are not reserved. Reserved
	// addresses only ever sit at the ends of a prefix, so two addresses
	// describe them exactly.
	first, last netip.Addr
	excl        *netipx.IPSet
	// avail is [first, last] minus the excludes: the set the free tree
	// starts from, and what Overlaps compares.
	avail    *netipx.IPSet
	capacity *big.Int
}

func parseDef(cidr string, exclude []string) (rangeDef, error) {
	if cidr == "" {
		return rangeDef{}, fmt.Errorf("%w: empty string", errInvalidPrefix)
	}
	pfx, err := netip.ParsePrefix(cidr)
	if err != nil {
		return rangeDef{}, fmt.Errorf("%w %s: %s", errInvalidPrefix, redact.Quote(cidr, redact.MaxValue), redact.Shorten(err.Error(), redact.MaxValue))
	}
	if pfx.Addr().Is4In6() {
		return rangeDef{}, fmt.Errorf("%w %s: %w; write the IPv4 range instead", errInvalidPrefix, redact.Quote(cidr, redact.MaxValue), errMappedAddress)
	}
	if m := pfx.Masked(); m != pfx {
		return rangeDef{}, fmt.Errorf("%w: %s should be written %s", errHostBitsSet, redact.Quote(cidr, redact.MaxValue), m)
	}

	whole := netipx.RangeOfPrefix(pfx)
	d := rangeDef{prefix: pfx, first: whole.From(), last: whole.To()}
	// Two host bits is the smallest prefix with something to reserve: /31
	// and /127 are point-to-point links (RFC 3021, RFC 6164), /32 and /128
	// a single host.
	if pfx.Addr().BitLen()-pfx.Bits() >= 2 {
		d.first = d.first.Next()
		if pfx.Addr().Is4() {
			d.last = d.last.Prev()
		}
	}

	var eb netipx.IPSetBuilder
	for _, s := range exclude {
		r, err := parseExclude(s, pfx)
		if err != nil {
			return rangeDef{}, err
		}
		eb.AddRange(r)
	}
	// The builder only reports errors for invalid ranges, and parseExclude
	// never yields one.
	d.excl, _ = eb.IPSet()

	var ab netipx.IPSetBuilder
	ab.AddRange(netipx.IPRangeFrom(d.first, d.last))
	ab.RemoveSet(d.excl)
	d.avail, _ = ab.IPSet()

	d.capacity = new(big.Int)
	for _, r := range d.avail.Ranges() {
		d.capacity.Add(d.capacity, spanSize(r.From(), r.To()))
	}
	return d, nil
}

// parseExclude accepts the three spellings users write in range specs. The
// separator decides the form so that error messages can say which form was
// attempted instead of listing every parser's complaint.
func parseExclude(s string, pfx netip.Prefix) (netipx.IPRange, error) {
	var r netipx.IPRange
	switch {
	case s == "":
		return r, fmt.Errorf("%w: empty string", errInvalidExclude)
	case strings.Contains(s, "-"):
		var err error
		if r, err = netipx.ParseIPRange(s); err != nil {
			return r, fmt.Errorf("%w %s: %s", errInvalidExclude, redact.Quote(s, redact.MaxValue), redact.Shorten(err.Error(), redact.MaxValue))
		}
	case strings.Contains(s, "/"):
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return r, fmt.Errorf("%w %s: %s", errInvalidExclude, redact.Quote(s, redact.MaxValue), redact.Shorten(err.Error(), redact.MaxValue))
		}
		if m := p.Masked(); m != p {
			return r, fmt.Errorf("%w %s: %w, should be written %s", errInvalidExclude, redact.Quote(s, redact.MaxValue), errHostBitsSet, m)
		}
		r = netipx.RangeOfPrefix(p)
	default:
		a, err := netip.ParseAddr(s)
		if err != nil {
			return r, fmt.Errorf("%w %s: %s", errInvalidExclude, redact.Quote(s, redact.MaxValue), redact.Shorten(err.Error(), redact.MaxValue))
		}
		if a.Zone() != "" {
			return r, fmt.Errorf("%w %s: zones are not allowed", errInvalidExclude, redact.Quote(s, redact.MaxValue))
		}
		r = netipx.IPRangeFrom(a, a)
	}
	if r.From().Is4In6() || r.To().Is4In6() {
		return r, fmt.Errorf("%w %s: %w; write the IPv4 address instead", errInvalidExclude, redact.Quote(s, redact.MaxValue), errMappedAddress)
	}
	if r.From().Is4() != pfx.Addr().Is4() {
		return r, fmt.Errorf("%w: exclude %s in %s range %s", ErrFamilyMismatch, redact.Quote(s, redact.MaxValue), family(pfx.Addr()), pfx)
	}
	if !pfx.Contains(r.From()) || !pfx.Contains(r.To()) {
		return r, fmt.Errorf("%w: exclude %s is not inside %s", errExcludeOutsideRange, redact.Quote(s, redact.MaxValue), pfx)
	}
	return r, nil
}

// check explains why a may not be held under this definition. The order
// matters: a reserved address that is also excluded reports ErrReserved,
// because that reason survives any edit of the excludes.
func (d *rangeDef) check(a netip.Addr) error {
	if !d.prefix.Contains(a) {
		return fmt.Errorf("%w: %s is not in %s", ErrOutOfRange, a, d.prefix)
	}
	if a.Less(d.first) {
		what := "network address"
		if a.Is6() {
			what = "subnet-router anycast address"
		}
		return fmt.Errorf("%w: %s is the %s of %s", ErrReserved, a, what, d.prefix)
	}
	if d.last.Less(a) {
		return fmt.Errorf("%w: %s is the broadcast address of %s", ErrReserved, a, d.prefix)
	}
	if d.excl.Contains(a) {
		return fmt.Errorf("%w: %s is excluded from %s", ErrExcluded, a, d.prefix)
	}
	return nil
}

// spanSize counts an inclusive range exactly; big.Int because a /64 has
// more addresses than an int64 can count and ::/0 more than a uint64.
func spanSize(lo, hi netip.Addr) *big.Int {
	l, h := lo.As16(), hi.As16()
	n := new(big.Int).SetBytes(h[:])
	n.Sub(n, new(big.Int).SetBytes(l[:]))
	return n.Add(n, big.NewInt(1))
}

func family(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}
