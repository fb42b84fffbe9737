package v1

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"strings"
)

// maxLabelValue is the longest label value the API server accepts.
const maxLabelValue = 63

// labelHashDigits is how many hex digits of a value's SHA-256 end a shortened label value: 40
// bits, so two long values sharing their first 52 characters still get different label values.
const labelHashDigits = 10

// SpaceHashDigits is the length of AddressSpace.Hash: 40 bits of SHA-256, so that a thousand
// spaces share a hash with a chance of one in two million. Two spaces that did would only be
// treated as one: an address could be held once in the two, never twice in one.
const SpaceHashDigits = 10

// SpaceOf is the address space of a range: its harvesterClusterName and harvesterNetworkName
// annotations, without surrounding blanks.
func SpaceOf(r *FloatingIPRange) AddressSpace {
	if r == nil {
		return AddressSpace{}
	}
	return AddressSpace{
		HarvesterClusterName: strings.TrimSpace(r.Annotations[AnnotationHarvesterClusterName]),
		HarvesterNetworkName: strings.TrimSpace(r.Annotations[AnnotationHarvesterNetworkName]),
	}
}

// Hash is the space's short stable name: SpaceHashDigits lower-case hex digits of the SHA-256 of
// the two names, a NUL between them so that no two pairs of names give one input.
func (s AddressSpace) Hash() string {
	sum := sha256.Sum256([]byte(s.HarvesterClusterName + "\x00" + s.HarvesterNetworkName))
	return hex.EncodeToString(sum[:])[:SpaceHashDigits]
}

// String names the space for messages: "harvester1/vlan10", with "-" for a name not set.
func (s AddressSpace) String() string {
	return cmp.Or(s.HarvesterClusterName, "-") + "/" + cmp.Or(s.HarvesterNetworkName, "-")
}

// AllocationAddressText writes addr as an allocation's name and LabelAddress do. An IPv4 address is
// its dotted quad ("10.0.0.5"). A custom resource's name must be a DNS-1123 subdomain, which
// refuses ':', so an IPv6 address is written fully expanded, lower case, with '-' for ':'
// ("fd00-0000-0000-0000-0000-0000-0000-0005", always 39 characters): one address, one spelling.
// The two families never collide: one has dots, the other dashes. A zone is dropped and an
// IPv4-mapped IPv6 address is written as its IPv4 form; the zero Addr yields "".
func AllocationAddressText(addr netip.Addr) string {
	if !addr.IsValid() {
		return ""
	}
	addr = addr.WithZone("").Unmap()
	if addr.Is4() {
		return addr.String()
	}
	return strings.ReplaceAll(addr.StringExpanded(), ":", "-")
}

// AllocationName is the name of the FloatingIPAllocation holding addr in space:
// AllocationAddressText(addr), a '.', and the space's hash ("10.0.0.5.3f2a9c1b0d"). The API
// server's uniqueness of names is the uniqueness of (space, address). The zero Addr yields "".
func AllocationName(space AddressSpace, addr netip.Addr) string {
	text := AllocationAddressText(addr)
	if text == "" {
		return ""
	}
	return text + "." + space.Hash()
}

// AllocationSlot is what an allocation's name holds: an address in the space of a hash.
// +k8s:deepcopy-gen=false
type AllocationSlot struct {
	Addr netip.Addr
	// Space is the space's hash; empty for a name of the releases before address spaces, which
	// was the bare address.
	Space string
}

// ParseAllocationName is the inverse of AllocationName; a bare address name (the releases before
// address spaces) gives a slot with no space. It reports ok only for a name that
// AllocationName or AllocationAddressText returns, so "FD00-…" (upper case), "010.0.0.5", a
// compressed IPv6 form or a mapped one are refused: such an object does not hold the address it
// seems to.
func ParseAllocationName(name string) (AllocationSlot, bool) {
	text, hash := name, ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 && len(name)-i-1 == SpaceHashDigits && isLowerHex(name[i+1:]) {
		text, hash = name[:i], name[i+1:]
	}
	parsed := text
	if strings.Contains(text, "-") {
		parsed = strings.ReplaceAll(text, "-", ":")
	}
	addr, err := netip.ParseAddr(parsed)
	if err != nil || AllocationAddressText(addr) != text {
		return AllocationSlot{}, false
	}
	return AllocationSlot{Addr: addr, Space: hash}, true
}

func isLowerHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// LabelValue is a label value standing for s: s itself when it is a valid label value, else its
// first 52 characters made valid (a character a label value may not hold becomes '-', and the
// value starts and ends with a letter or digit) followed by '-' and 10 hex digits of s's SHA-256,
// so that two different strings never share a value by accident. The empty string stays empty.
func LabelValue(s string) string {
	if s == "" || len(s) <= maxLabelValue && validLabelValue(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	var b strings.Builder
	for _, c := range s {
		if b.Len() == maxLabelValue-1-labelHashDigits {
			break
		}
		if labelChar(c) {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	prefix := strings.Trim(b.String(), "-._")
	if prefix == "" {
		return hex.EncodeToString(sum[:])[:labelHashDigits]
	}
	return prefix + "-" + hex.EncodeToString(sum[:])[:labelHashDigits]
}

// RangeLabelValue is LabelRange's value for a range: LabelValue of its name.
func RangeLabelValue(rangeName string) string { return LabelValue(rangeName) }

func labelChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

func validLabelValue(s string) bool {
	for _, c := range s {
		if !labelChar(c) {
			return false
		}
	}
	alnum := func(c byte) bool { return labelChar(rune(c)) && c != '-' && c != '_' && c != '.' }
	return alnum(s[0]) && alnum(s[len(s)-1])
}
