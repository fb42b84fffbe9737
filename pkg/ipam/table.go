package ipam

import (
	"fmt"
	"net/netip"
	"strings"
	"text/tabwriter"
)

// Row is one allocation with the range it belongs to.
type Row struct {
	Range string
	Addr  netip.Addr
	Owner Owner
}

// Table returns every allocation in every pool, sorted by range, then
// address.
func (al *Allocator) Table() []Row {
	al.mu.Lock()
	defer al.mu.Unlock()
	var rows []Row
	for _, n := range al.namesLocked() {
		for _, a := range al.pools[n].Allocations() {
			rows = append(rows, Row{Range: n, Addr: a.Addr, Owner: a.Owner})
		}
	}
	return rows
}

// Dump renders the allocation table with a per-range summary line, for a
// debug log or a support bundle. Ranges with no allocations still appear so
// an empty table is distinguishable from a missing range.
func (al *Allocator) Dump() string {
	al.mu.Lock()
	defer al.mu.Unlock()
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "RANGE\tADDRESS\tOWNER\tUID")
	for _, n := range al.namesLocked() {
		p := al.pools[n]
		fmt.Fprintf(tw, "%s\t%s\t%d used, %s available\t\n", n, p, p.Used(), p.Available())
		for _, a := range p.Allocations() {
			owner := a.Owner.Name
			if a.Owner.Namespace != "" {
				owner = a.Owner.Namespace + "/" + owner
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n, a.Addr, owner, a.Owner.UID)
		}
	}
	tw.Flush()
	return sb.String()
}
