// Package ipam hands out floating IP addresses from named address ranges.
//
// It is deliberately free of Kubernetes types: the operator's controllers
// translate FloatingIP and range objects into calls on an Allocator, and the
// allocator itself stays small enough to be fuzzed against a trivial model.
// The API server remains the source of truth; the allocator is an in-memory
// index that is rebuilt from it on start-up with Claim, which is why every
// mutating call is idempotent per owner UID.
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
