package metrics

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestFloatingIPReady: the gauge is set, follows the Ready condition, moves with a FloatingIP's
// guest cluster without leaving the old series behind, and is deleted with the FloatingIP only.
func TestFloatingIPReady(t *testing.T) {
	m := New()
	value := func(ns, name, guest string) float64 {
		return testutil.ToFloat64(m.FloatingIPReady.WithLabelValues(ns, name, guest))
	}

	m.SetFloatingIPReady("c-m-1", "fip-a", "guest-a", false)
	m.SetFloatingIPReady("c-m-2", "fip-b", "guest-b", true)
	if got := testutil.CollectAndCount(m.FloatingIPReady); got != 2 {
		t.Fatalf("%d series; want 2", got)
	}
	if value("c-m-1", "fip-a", "guest-a") != 0 || value("c-m-2", "fip-b", "guest-b") != 1 {
		t.Fatal("set values not recorded")
	}

	m.SetFloatingIPReady("c-m-1", "fip-a", "guest-a", true)
	if value("c-m-1", "fip-a", "guest-a") != 1 {
		t.Error("update to Ready not recorded")
	}

	m.SetFloatingIPReady("c-m-1", "fip-a", "guest-renamed", false)
	if got := testutil.CollectAndCount(m.FloatingIPReady); got != 2 {
		t.Errorf("%d series after the guest cluster name changed; want 2 (the old one removed)", got)
	}

	m.DeleteFloatingIP("c-m-1", "fip-a")
	if got := testutil.CollectAndCount(m.FloatingIPReady); got != 1 {
		t.Fatalf("%d series after delete; want 1", got)
	}
	if value("c-m-2", "fip-b", "guest-b") != 1 {
		t.Error("deleting one FloatingIP changed another's series")
	}
	// Deleting a FloatingIP without a series is harmless.
	m.DeleteFloatingIP("c-m-9", "none")
}

// TestFloatingIPReadyCostsTheSameWithManySeries: an update allocates no more with a thousand other
// FloatingIPs' series than with none — it does not collect the whole vector — and a FloatingIP
// moved back to its first guest cluster name still has one series.
func TestFloatingIPReadyCostsTheSameWithManySeries(t *testing.T) {
	m := New()
	m.SetFloatingIPReady("c-m-1", "fip-a", "guest-a", true)
	alone := testing.AllocsPerRun(50, func() { m.SetFloatingIPReady("c-m-1", "fip-a", "guest-a", true) })
	for i := 0; i < 1000; i++ {
		m.SetFloatingIPReady(fmt.Sprintf("c-m-x%d", i), "fip", "guest", i%2 == 0)
	}
	many := testing.AllocsPerRun(50, func() { m.SetFloatingIPReady("c-m-1", "fip-a", "guest-a", true) })
	if many > alone {
		t.Errorf("an update allocates %.0f times beside 1000 other series, %.0f alone", many, alone)
	}

	m.SetFloatingIPReady("c-m-1", "fip-a", "guest-b", true)
	m.SetFloatingIPReady("c-m-1", "fip-a", "guest-a", false)
	if got := testutil.CollectAndCount(m.FloatingIPReady); got != 1001 {
		t.Errorf("%d series; want 1001 (one per FloatingIP)", got)
	}
	if got := testutil.ToFloat64(m.FloatingIPReady.WithLabelValues("c-m-1", "fip-a", "guest-a")); got != 0 {
		t.Errorf("fip-a is %v; want 0", got)
	}
}
