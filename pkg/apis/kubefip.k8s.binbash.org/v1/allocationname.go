package v1

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"strings"
)

// maxLabelValue is the longest label value the API server accepts.
const maxLabelValue = 63

// rangeLabelHashDigits is how many hex digits of the range name's SHA-256 end a shortened
// LabelRange value: 40 bits, so two long range names sharing their first 52 characters still get
// different values.
const rangeLabelHashDigits = 10

// AllocationName is the name of the FloatingIPAllocation holding addr. An IPv4 address is named by
// its dotted quad ("10.0.0.5", already a DNS-1123 subdomain). A custom resource's name must be a
// DNS-1123 subdomain, which refuses ':', so an IPv6 address is written fully expanded, lower case,
// with '-' for ':' ("fd00-0000-0000-0000-0000-0000-0000-0005", always 39 characters): one address,
// one spelling, so the API server's uniqueness of names is the uniqueness of addresses. The two
// families never collide: one has dots, the other dashes. A zone is dropped and an IPv4-mapped
// IPv6 address is named as its IPv4 form; the zero Addr yields "".
func AllocationName(addr netip.Addr) string {
	if !addr.IsValid() {
		return ""
	}
	addr = addr.WithZone("").Unmap()
	if addr.Is4() {
		return addr.String()
	}
	return strings.ReplaceAll(addr.StringExpanded(), ":", "-")
}

// AddressOfAllocationName is the inverse of AllocationName. It reports ok only for a name that
// AllocationName returns for some address, so "FD00-…" (upper case), "010.0.0.5", a compressed
// IPv6 form or a mapped one are refused: such an object does not hold the address it seems to.
func AddressOfAllocationName(name string) (addr netip.Addr, ok bool) {
	text := name
	if strings.Contains(name, "-") {
		text = strings.ReplaceAll(name, "-", ":")
	}
	addr, err := netip.ParseAddr(text)
	if err != nil || AllocationName(addr) != name {
		return netip.Addr{}, false
	}
	return addr, true
}

// RangeLabelValue is LabelRange's value for a range: the range name when it fits a label value
// (63 characters), else its first 52 characters (without a trailing '-' or '.') followed by '-' and
// 10 hex digits of the name's SHA-256. Range names are DNS-1123 subdomains of up to 253
// characters, so the value is always a valid label value.
func RangeLabelValue(rangeName string) string {
	if len(rangeName) <= maxLabelValue {
		return rangeName
	}
	sum := sha256.Sum256([]byte(rangeName))
	prefix := strings.TrimRight(rangeName[:maxLabelValue-1-rangeLabelHashDigits], "-.")
	return prefix + "-" + hex.EncodeToString(sum[:])[:rangeLabelHashDigits]
}
