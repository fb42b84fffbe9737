package metrics

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// TestFloatingIPReady: the gauge is set, follows the Ready condition, moves with a FloatingIP's
// guest cluster without leaving the old series behind, and is deleted with the FloatingIP only.
func TestFloatingIPReady(t *testing.T) {
	m := New()
	value := func(ns, name, guest string) float64 {
		return testutil.ToFloat64(m.FloatingIPReady.WithLabelValues(ns, name, guest))
	}

	m.SetFloatingIP("c-m-1", "fip-a", "guest-a", false, ServedUnknown)
	m.SetFloatingIP("c-m-2", "fip-b", "guest-b", true, ServedUnknown)
	if got := testutil.CollectAndCount(m.FloatingIPReady); got != 2 {
		t.Fatalf("%d series; want 2", got)
	}
	if value("c-m-1", "fip-a", "guest-a") != 0 || value("c-m-2", "fip-b", "guest-b") != 1 {
		t.Fatal("set values not recorded")
	}

	m.SetFloatingIP("c-m-1", "fip-a", "guest-a", true, ServedUnknown)
	if value("c-m-1", "fip-a", "guest-a") != 1 {
		t.Error("update to Ready not recorded")
	}

	m.SetFloatingIP("c-m-1", "fip-a", "guest-renamed", false, ServedUnknown)
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
	m.SetFloatingIP("c-m-1", "fip-a", "guest-a", true, ServedUnknown)
	alone := testing.AllocsPerRun(50, func() { m.SetFloatingIP("c-m-1", "fip-a", "guest-a", true, ServedUnknown) })
	for i := 0; i < 1000; i++ {
		m.SetFloatingIP(fmt.Sprintf("c-m-x%d", i), "fip", "guest", i%2 == 0, ServedYes)
	}
	many := testing.AllocsPerRun(50, func() { m.SetFloatingIP("c-m-1", "fip-a", "guest-a", true, ServedUnknown) })
	if many > alone {
		t.Errorf("an update allocates %.0f times beside 1000 other series, %.0f alone", many, alone)
	}

	m.SetFloatingIP("c-m-1", "fip-a", "guest-b", true, ServedUnknown)
	m.SetFloatingIP("c-m-1", "fip-a", "guest-a", false, ServedUnknown)
	if got := testutil.CollectAndCount(m.FloatingIPReady); got != 1001 {
		t.Errorf("%d series; want 1001 (one per FloatingIP)", got)
	}
	if got := testutil.ToFloat64(m.FloatingIPReady.WithLabelValues("c-m-1", "fip-a", "guest-a")); got != 0 {
		t.Errorf("fip-a is %v; want 0", got)
	}
}

// TestFloatingIPServedFollowsTheFloatingIP: the served series is set beside the ready one, moves
// with a renamed guest cluster, has no series before the first look, and goes with the FloatingIP.
func TestFloatingIPServedFollowsTheFloatingIP(t *testing.T) {
	m := New()
	served := func(ns, name, guest string) float64 {
		g, err := m.FloatingIPServed.GetMetricWith(map[string]string{LabelNamespace: ns, LabelName: name, LabelGuestClusterName: guest})
		if err != nil {
			t.Fatal(err)
		}
		var pb dto.Metric
		if err := g.Write(&pb); err != nil {
			t.Fatal(err)
		}
		return pb.GetGauge().GetValue()
	}
	m.SetFloatingIP("c-m-1", "fip-a", "guest-a", false, ServedUnknown)
	if n := testutil.CollectAndCount(m.FloatingIPServed); n != 0 {
		t.Fatalf("%d served series before the guest was looked at", n)
	}
	m.SetFloatingIP("c-m-1", "fip-a", "guest-a", false, ServedNo)
	if v := served("c-m-1", "fip-a", "guest-a"); v != ServedNo {
		t.Errorf("served = %v; want %v", v, ServedNo)
	}
	m.SetFloatingIP("c-m-1", "fip-a", "guest-b", true, ServedYes)
	if n := testutil.CollectAndCount(m.FloatingIPServed); n != 1 {
		t.Errorf("%d served series after the guest was renamed; want 1", n)
	}
	m.DeleteFloatingIP("c-m-1", "fip-a")
	if n := testutil.CollectAndCount(m.FloatingIPServed); n != 0 {
		t.Errorf("%d served series after the FloatingIP went", n)
	}
}
