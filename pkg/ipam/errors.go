package ipam

import (
	"errors"
	"fmt"
	"net/netip"
)

// Sentinel errors. Returned errors wrap these with context, so compare with
// errors.Is rather than ==. Only those callers tell apart are exported; the
// rest label the message, which callers pass on as it is.
var (
	// errInvalidPrefix means the range CIDR could not be parsed.
	errInvalidPrefix = errors.New("ipam: invalid CIDR")
	// errHostBitsSet means a CIDR such as 10.0.0.5/24 was given where the
	// canonical 10.0.0.0/24 was almost certainly meant; it is rejected rather
	// than silently masked because the user may equally have meant a /32.
	errHostBitsSet = errors.New("ipam: CIDR has host bits set")
	// errInvalidExclude means an exclude entry could not be parsed.
	errInvalidExclude = errors.New("ipam: invalid exclude")
	// errExcludeOutsideRange means an exclude is not entirely inside the
	// range, which almost always indicates a typo in the range definition.
	errExcludeOutsideRange = errors.New("ipam: exclude outside range")
	// errMappedAddress means an IPv4-mapped IPv6 address (::ffff:10.0.0.1) or prefix was given.
	// Such a range would hold addresses that are IPv4 on the wire and IPv6 in the record, and
	// every address handed out from it would be reported out of range; the IPv4 form is meant.
	errMappedAddress = errors.New("ipam: IPv4-mapped IPv6 addresses are not allowed")
	// ErrFamilyMismatch means IPv4 and IPv6 were mixed in one definition.
	ErrFamilyMismatch = errors.New("ipam: address family mismatch")

	// ErrOutOfRange means the address is not in the range at all (this
	// includes invalid addresses and the wrong address family).
	ErrOutOfRange = errors.New("ipam: address out of range")
	// ErrReserved means the address is the network, broadcast or
	// subnet-router anycast address of the range.
	ErrReserved = errors.New("ipam: address reserved")
	// ErrExcluded means the address is listed in the range's excludes.
	ErrExcluded = errors.New("ipam: address excluded")
	// ErrExhausted means the range has no free address left.
	ErrExhausted = errors.New("ipam: range exhausted")
	// errInvalidOwner means the owner has an empty UID. The UID is the only
	// identity a pool trusts, so an empty one would make every
	// anonymous caller the same owner.
	errInvalidOwner = errors.New("ipam: owner has no UID")
)

// TakenError reports a static claim on an address that someone else holds.
// It carries the holder so the controller can put it in an event or status
// condition, telling the user which FloatingIP is in the way.
type TakenError struct {
	Addr   netip.Addr
	Holder Owner
}

func (e *TakenError) Error() string {
	return fmt.Sprintf("ipam: address %s is taken by %s", e.Addr, e.Holder)
}
