// Package ipam keeps the addresses of one floating IP range: which may be
// handed out, who holds which, and which is the lowest free one.
//
// It is deliberately free of Kubernetes types, and small enough to be fuzzed
// against a trivial model. The allocation engine (pkg/allocation) keeps one
// Pool per range and feeds it from the FloatingIPAllocation objects, which
// are the record of truth: a Pool is an in-memory index of them, filled with
// Claim when a range's pool is built and kept in step with Confirm and
// Release as the objects come and go, which is why every mutating call is
// idempotent per owner UID. A worker reserves an address (ReserveNext, or
// Reserve for a static one) before it creates the object, so concurrent
// workers pick different addresses without a lock held across the API call;
// the object confirms the reservation, and a failed create gives it back
// with Unreserve.
//
// Cost is proportional to the number of allocations and excludes, never to
// the size of a range: free addresses are kept as a balanced tree of
// inclusive intervals, so an IPv6 /64 costs no more than an IPv4 /29 and the
// lowest free address is found in logarithmic time.
//
// Which addresses are never handed out:
//
//   - IPv4: the network and broadcast addresses, except in a /31 or /32,
//     where RFC 3021 point-to-point semantics make every address usable.
//     A floating IP is a host address, so a /31 pair or a single /32 is a
//     reasonable thing to hand out whole.
//   - IPv6: the subnet-router anycast address (all-zero host bits, RFC 4291
//     section 2.6.1), except in a /127 (RFC 6164) or /128. IPv6 has no
//     broadcast, so the last address is usable.
//   - Anything listed in the range's excludes.
package ipam
