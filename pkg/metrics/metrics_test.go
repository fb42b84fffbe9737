package metrics

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
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

	m.SetFloatingIP("c-m-1", "fip-a", "guest-a", false, ServedUnknown, KubevipInstalledUnknown)
	m.SetFloatingIP("c-m-2", "fip-b", "guest-b", true, ServedUnknown, KubevipInstalledUnknown)
	if got := testutil.CollectAndCount(m.FloatingIPReady); got != 2 {
		t.Fatalf("%d series; want 2", got)
	}
	if value("c-m-1", "fip-a", "guest-a") != 0 || value("c-m-2", "fip-b", "guest-b") != 1 {
		t.Fatal("set values not recorded")
	}

	m.SetFloatingIP("c-m-1", "fip-a", "guest-a", true, ServedUnknown, KubevipInstalledUnknown)
	if value("c-m-1", "fip-a", "guest-a") != 1 {
		t.Error("update to Ready not recorded")
	}

	m.SetFloatingIP("c-m-1", "fip-a", "guest-renamed", false, ServedUnknown, KubevipInstalledUnknown)
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
	m.SetFloatingIP("c-m-1", "fip-a", "guest-a", true, ServedUnknown, KubevipInstalledUnknown)
	alone := testing.AllocsPerRun(50, func() { m.SetFloatingIP("c-m-1", "fip-a", "guest-a", true, ServedUnknown, KubevipInstalledUnknown) })
	for i := 0; i < 1000; i++ {
		m.SetFloatingIP(fmt.Sprintf("c-m-x%d", i), "fip", "guest", i%2 == 0, ServedYes, KubevipInstalledYes)
	}
	many := testing.AllocsPerRun(50, func() { m.SetFloatingIP("c-m-1", "fip-a", "guest-a", true, ServedUnknown, KubevipInstalledUnknown) })
	if many > alone {
		t.Errorf("an update allocates %.0f times beside 1000 other series, %.0f alone", many, alone)
	}

	m.SetFloatingIP("c-m-1", "fip-a", "guest-b", true, ServedUnknown, KubevipInstalledUnknown)
	m.SetFloatingIP("c-m-1", "fip-a", "guest-a", false, ServedUnknown, KubevipInstalledUnknown)
	if got := testutil.CollectAndCount(m.FloatingIPReady); got != 1001 {
		t.Errorf("%d series; want 1001 (one per FloatingIP)", got)
	}
	if got := testutil.ToFloat64(m.FloatingIPReady.WithLabelValues("c-m-1", "fip-a", "guest-a")); got != 0 {
		t.Errorf("fip-a is %v; want 0", got)
	}
}

// floatingIPValue is the value of the series of g for the FloatingIP ns/name of guest cluster guest.
func floatingIPValue(t *testing.T, g *prometheus.GaugeVec, ns, name, guest string) float64 {
	t.Helper()
	series, err := g.GetMetricWith(map[string]string{LabelNamespace: ns, LabelName: name, LabelGuestClusterName: guest})
	if err != nil {
		t.Fatal(err)
	}
	var pb dto.Metric
	if err := series.Write(&pb); err != nil {
		t.Fatal(err)
	}
	return pb.GetGauge().GetValue()
}

// TestFloatingIPServedFollowsTheFloatingIP: the served series is set beside the ready one, moves
// with a renamed guest cluster, has no series before the first look, and goes with the FloatingIP.
func TestFloatingIPServedFollowsTheFloatingIP(t *testing.T) {
	m := New()
	m.SetFloatingIP("c-m-1", "fip-a", "guest-a", false, ServedUnknown, KubevipInstalledUnknown)
	if n := testutil.CollectAndCount(m.FloatingIPServed); n != 0 {
		t.Fatalf("%d served series before the guest was looked at", n)
	}
	m.SetFloatingIP("c-m-1", "fip-a", "guest-a", false, ServedNo, KubevipInstalledUnknown)
	if v := floatingIPValue(t, m.FloatingIPServed, "c-m-1", "fip-a", "guest-a"); v != ServedNo {
		t.Errorf("served = %v; want %v", v, ServedNo)
	}
	m.SetFloatingIP("c-m-1", "fip-a", "guest-b", true, ServedYes, KubevipInstalledUnknown)
	if n := testutil.CollectAndCount(m.FloatingIPServed); n != 1 {
		t.Errorf("%d served series after the guest was renamed; want 1", n)
	}
	m.DeleteFloatingIP("c-m-1", "fip-a")
	if n := testutil.CollectAndCount(m.FloatingIPServed); n != 0 {
		t.Errorf("%d served series after the FloatingIP went", n)
	}
}

// TestFloatingIPKubevipInstalledFollowsTheFloatingIP: the kube-vip series has no value before a
// guest pass says, then follows what it says (not installed, installed, not wanted) independently
// of the other FloatingIP series, is removed when a pass says nothing again, moves with a renamed
// guest cluster, and goes with the FloatingIP, another FloatingIP's series left as it is.
func TestFloatingIPKubevipInstalledFollowsTheFloatingIP(t *testing.T) {
	m := New()
	count := func() int { return testutil.CollectAndCount(m.FloatingIPKubevipInstalled) }
	m.SetFloatingIP("c-m-1", "fip-a", "guest-a", false, ServedUnknown, KubevipInstalledUnknown)
	m.SetFloatingIP("c-m-2", "fip-b", "guest-b", true, ServedYes, KubevipInstalledYes)
	if n := count(); n != 1 {
		t.Fatalf("%d kube-vip series with one FloatingIP reported; want 1", n)
	}
	for _, want := range []float64{KubevipInstalledNo, KubevipInstalledYes, KubevipNotWanted, KubevipInstalledNo} {
		m.SetFloatingIP("c-m-1", "fip-a", "guest-a", false, ServedNo, want)
		if v := floatingIPValue(t, m.FloatingIPKubevipInstalled, "c-m-1", "fip-a", "guest-a"); v != want {
			t.Errorf("kube-vip installed = %v; want %v", v, want)
		}
		if v := floatingIPValue(t, m.FloatingIPServed, "c-m-1", "fip-a", "guest-a"); v != ServedNo {
			t.Errorf("served = %v beside kube-vip %v; want %v", v, want, ServedNo)
		}
	}
	m.SetFloatingIP("c-m-1", "fip-a", "guest-a", false, ServedNo, KubevipInstalledUnknown)
	if n := count(); n != 1 {
		t.Errorf("%d kube-vip series once fip-a's pass said nothing of it; want fip-b's only", n)
	}
	m.SetFloatingIP("c-m-1", "fip-a", "guest-a", false, ServedNo, KubevipInstalledNo)
	m.SetFloatingIP("c-m-1", "fip-a", "guest-renamed", false, ServedNo, KubevipInstalledNo)
	if n := count(); n != 2 {
		t.Errorf("%d kube-vip series after the guest was renamed; want 2 (the old one removed)", n)
	}
	if v := floatingIPValue(t, m.FloatingIPKubevipInstalled, "c-m-1", "fip-a", "guest-renamed"); v != KubevipInstalledNo {
		t.Errorf("kube-vip installed under the new guest name = %v; want %v", v, float64(KubevipInstalledNo))
	}
	m.DeleteFloatingIP("c-m-1", "fip-a")
	if n := count(); n != 1 {
		t.Errorf("%d kube-vip series after fip-a went; want fip-b's only", n)
	}
	if v := floatingIPValue(t, m.FloatingIPKubevipInstalled, "c-m-2", "fip-b", "guest-b"); v != KubevipInstalledYes {
		t.Errorf("fip-b's kube-vip series = %v after fip-a went; want %v", v, float64(KubevipInstalledYes))
	}
}
