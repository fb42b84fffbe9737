package floatingiprange

import (
	"math/big"
	"testing"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// TestSetCountsIntegers: the integer counts equal the decimal strings when they fit in an int64
// and are left out when they do not; UsedPercent counts used and retained addresses, rounds down,
// stays within 0-100 and is 0 for an empty pool.
func TestSetCountsIntegers(t *testing.T) {
	// An IPv6 pool hands out every address but the subnet-router anycast one.
	slash64 := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 64), big.NewInt(1))
	slash65 := new(big.Int).SetInt64(1<<63 - 1)
	for _, tc := range []struct {
		name                string
		capacity, available *big.Int
		used, retained      int
		wantCap, wantAvail  *int64
		wantPercent         int64
	}{
		{"empty /29", big.NewInt(6), big.NewInt(6), 0, 0, ptr(6), ptr(6), 0},
		{"full /29", big.NewInt(6), big.NewInt(0), 5, 1, ptr(6), ptr(0), 100},
		{"rounded down", big.NewInt(200), big.NewInt(1), 198, 1, ptr(200), ptr(1), 99},
		{"retained counts", big.NewInt(254), big.NewInt(127), 0, 127, ptr(254), ptr(127), 50},
		{"one in a thousand", big.NewInt(1000), big.NewInt(999), 1, 0, ptr(1000), ptr(999), 0},
		{"no capacity", big.NewInt(0), big.NewInt(0), 3, 0, ptr(0), ptr(0), 0},
		{"more held than the shrunk pool", big.NewInt(4), big.NewInt(0), 6, 0, ptr(4), ptr(0), 100},
		{"IPv6 /65, the largest int64", slash65, slash65, 0, 0, ptr(1<<63 - 1), ptr(1<<63 - 1), 0},
		{"IPv6 /64", slash64, new(big.Int).Sub(slash64, big.NewInt(20)), 20, 0, nil, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var status v1.FloatingIPRangeStatus
			setCounts(&status, allocation.Summary{Capacity: tc.capacity, Available: tc.available, Used: tc.used, Retained: tc.retained})
			if status.Capacity != tc.capacity.String() || status.Available != tc.available.String() {
				t.Errorf("strings %q/%q, want %s/%s", status.Capacity, status.Available, tc.capacity, tc.available)
			}
			if !sameInt(status.CapacityCount, tc.wantCap) {
				t.Errorf("capacityCount %s, want %s", show(status.CapacityCount), show(tc.wantCap))
			}
			if !sameInt(status.AvailableCount, tc.wantAvail) {
				t.Errorf("availableCount %s, want %s", show(status.AvailableCount), show(tc.wantAvail))
			}
			if status.UsedPercent != tc.wantPercent {
				t.Errorf("usedPercent %d, want %d", status.UsedPercent, tc.wantPercent)
			}
		})
	}
}

func ptr(v int64) *int64 { return &v }

func sameInt(a, b *int64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func show(p *int64) string {
	if p == nil {
		return "absent"
	}
	return big.NewInt(*p).String()
}
