package integration

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// TestListViewCells reads the API server's table, the one kubectl and the Rancher UI list, for
// ranges and a FloatingIP the operator worked on: the counts are integers (so they sort as
// numbers), an IPv6 /64's too-large counts are empty cells next to their exact decimal text, the
// range shows its Harvester cluster and network, and the FloatingIP its guest state.
func TestListViewCells(t *testing.T) {
	f := newFixture(t, "c-m-listview")
	f.operator()
	f.createRange("listview29", "10.131.77.0/29")
	f.createRange("listview64", "fd00:77::/64")
	f.createFIP("lv-1", "listview29", "")
	f.createFIP("lv-2", "listview29", "")

	f.waitRange("listview29", 30*time.Second, "capacity 6, used 2", func(r *v1.FloatingIPRange) bool {
		return r != nil && r.Status.CapacityCount != nil && *r.Status.CapacityCount == 6 && r.Status.Used == 2 && r.Status.UsedPercent == 33
	})
	f.waitRange("listview64", 30*time.Second, "a capacity", func(r *v1.FloatingIPRange) bool {
		return r != nil && r.Status.Capacity != ""
	})
	x := f.waitFIP("lv-1", 30*time.Second, "an address and a guest state", func(x *v1.FloatingIP) bool {
		return suite.Allocated(x) && x.Status.GuestState != ""
	})

	row := tableRow(t, tableOf(t, "floatingipranges", "", "listview29"))
	for column, want := range map[string]any{
		"Capacity": int64(6), "Used": int64(2), "Available": int64(4), "Used%": int64(33),
		"Exact-Capacity": "6", "Exact-Available": "4",
		"Harvester": "harvester-" + f.ns, "Network": "vlan10", "CIDR": "10.131.77.0/29",
	} {
		checkCell(t, "listview29", row, column, want)
	}

	row = tableRow(t, tableOf(t, "floatingipranges", "", "listview64"))
	for column, want := range map[string]any{
		"Capacity": nil, "Available": nil, "Used": int64(0), "Used%": int64(0),
		"Exact-Capacity": "18446744073709551615", "Exact-Available": "18446744073709551615",
	} {
		checkCell(t, "listview64", row, column, want)
	}

	// No Rancher cluster owns the fixture's namespace: the guest cluster is Pending.
	row = tableRow(t, tableOf(t, "floatingips", f.ns, "lv-1"))
	for column, want := range map[string]any{
		"Guest": "Pending", "IP": x.Status.IPAddress, "Range": "listview29", "Cluster": "lv-1",
	} {
		checkCell(t, "lv-1", row, column, want)
	}
}

// tableRow returns the cells of the table's only row by column name.
func tableRow(t *testing.T, table metav1.Table) map[string]any {
	t.Helper()
	if len(table.Rows) != 1 {
		t.Fatalf("table has %d rows, want 1", len(table.Rows))
	}
	cells := table.Rows[0].Cells
	if len(cells) != len(table.ColumnDefinitions) {
		t.Fatalf("%d cells for %d columns", len(cells), len(table.ColumnDefinitions))
	}
	out := map[string]any{}
	for i, c := range table.ColumnDefinitions {
		out[c.Name] = cells[i]
	}
	return out
}

// checkCell compares a cell as JSON decoded it (every number a float64) with want: an int64 for an
// integer cell, a string, or nil for an empty cell.
func checkCell(t *testing.T, what string, row map[string]any, column string, want any) {
	t.Helper()
	got, ok := row[column]
	if !ok {
		t.Errorf("%s: no column %s", what, column)
		return
	}
	if n, isInt := want.(int64); isInt {
		number, isNumber := got.(float64)
		if !isNumber || number != float64(n) {
			t.Errorf("%s: column %s = %#v, want the integer %d", what, column, got, n)
		}
		return
	}
	if got != want {
		t.Errorf("%s: column %s = %s, want %s", what, column, cellText(got), cellText(want))
	}
}

func cellText(v any) string {
	if v == nil {
		return "empty"
	}
	return fmt.Sprintf("%#v", v)
}
