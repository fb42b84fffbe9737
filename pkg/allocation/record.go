package allocation

import (
	"maps"
	"net/netip"
	"slices"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// A range's record is written by this operator in one spelling per address (netip's: lower case,
// shortest IPv6 form, IPv4 without a mapped prefix or leading zeros, no zone), but a person editing
// the status or a restore tool may write another: "::FFFF", "fd00:0::1", "::ffff:10.0.0.1",
// "fe80::1%eth0", or the same address twice in two spellings. Every reader goes through the index
// below, which maps each address to the one record key that holds it, so that no spelling lets a
// second FloatingIP claim an address already recorded. Keys naming no address at all, or naming it
// ambiguously ("010.0.0.1": decimal ten or octal eight?), are never guessed at: they are flagged.

// canonical reads a record key: the address it names, in the one spelling the record uses.
func canonical(key string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(key)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

// recordIndex is a range's record read through canonical spellings.
type recordIndex struct {
	// holder maps each address to the key whose allocation holds it: the canonical spelling when
	// present, else the first spelling in key order. Any other key naming the same address is
	// never honoured.
	holder map[netip.Addr]string
	// unreadable are the keys naming no address, in key order.
	unreadable []string
}

func indexRecord(record map[string]v1.Allocation) recordIndex {
	idx := recordIndex{holder: make(map[netip.Addr]string, len(record))}
	// Canonical keys first, so that they win over any other spelling of their address.
	var later []string
	for _, key := range slices.Sorted(maps.Keys(record)) {
		addr, ok := canonical(key)
		switch {
		case !ok:
			idx.unreadable = append(idx.unreadable, key)
		case addr.String() != key:
			later = append(later, key)
		default:
			idx.holder[addr] = key
		}
	}
	for _, key := range later {
		addr, _ := canonical(key)
		if _, held := idx.holder[addr]; !held {
			idx.holder[addr] = key
		}
	}
	return idx
}

// keysOf returns every key of uid naming one of addrs, in any spelling; with no addrs, every key
// of uid, readable or not, so that releasing a FloatingIP leaves nothing of it behind.
func keysOf(record map[string]v1.Allocation, uid string, addrs []netip.Addr) []string {
	wanted := map[netip.Addr]bool{}
	for _, a := range addrs {
		wanted[a.WithZone("").Unmap()] = true
	}
	var out []string
	for _, key := range slices.Sorted(maps.Keys(record)) {
		if string(record[key].UID) != uid {
			continue
		}
		if len(addrs) > 0 {
			if addr, ok := canonical(key); !ok || !wanted[addr] {
				continue
			}
		}
		out = append(out, key)
	}
	return out
}
