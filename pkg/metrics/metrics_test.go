package metrics

import (
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
