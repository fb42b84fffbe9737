package ipam

import (
	"errors"
	"fmt"
	"net/netip"
)

// Sentinel errors. Returned errors wrap these with context, so compare with
// errors.Is rather than ==.
var (
	// ErrInvalidPrefix means the range CIDR could not be parsed.
	ErrInvalidPrefix = errors.New("ipam: invalid CIDR")
	// ErrHostBitsSet means a CIDR such as 10.0.0.5/24 was given where the
	// canonical 10.0.0.0/24 was almost certainly meant; it is rejected rather
	// than silently masked because the user may equally have meant a /32.
	ErrHostBitsSet = errors.New("ipam: CIDR has host bits set")
	// ErrInvalidExclude means an exclude entry could not be parsed.
	ErrInvalidExclude = errors.New("ipam: invalid exclude")
	// ErrExcludeOutsideRange means an exclude is not entirely inside the
	// range, which almost always indicates a typo in the range definition.
	ErrExcludeOutsideRange = errors.New("ipam: exclude outside range")
	// ErrMappedAddress means an IPv4-mapped IPv6 address (::ffff:10.0.0.1) or prefix was given.
	// Such a range would hold addresses that are IPv4 on the wire and IPv6 in the record, and
	// every address handed out from it would be reported out of range; the IPv4 form is meant.
	ErrMappedAddress = errors.New("ipam: IPv4-mapped IPv6 addresses are not allowed")
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
	// ErrTaken means another owner holds the address; the concrete error is
	// a *TakenError naming the holder.
	ErrTaken = errors.New("ipam: address taken")
	// ErrExhausted means the range has no free address left.
	ErrExhausted = errors.New("ipam: range exhausted")
	// ErrWouldOrphan means a range change was refused because existing
	// allocations would fall outside the new definition.
	ErrWouldOrphan = errors.New("ipam: change would orphan allocations")
	// ErrPoolNotFound means no range of that name is known to the Allocator.
	ErrPoolNotFound = errors.New("ipam: pool not found")
	// ErrInvalidOwner means the owner has an empty UID. The UID is the only
	// identity the allocator trusts, so an empty one would make every
	// anonymous caller the same owner.
	ErrInvalidOwner = errors.New("ipam: owner has no UID")
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

// Unwrap lets errors.Is(err, ErrTaken) match without callers needing the
// concrete type.
func (e *TakenError) Unwrap() error { return ErrTaken }
