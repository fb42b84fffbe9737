package floatingip

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
)

// TestReadyMetric: kubefipoperator_floatingip_ready follows the Ready condition SetReady decides,
// is 0 before there is one, and is removed when the FloatingIP is being deleted or gone.
func TestReadyMetric(t *testing.T) {
	m := metrics.New()
	h := &handler{metrics: m}
	f := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: "fip", Namespace: "c-m-1",
		Annotations: map[string]string{v1.AnnotationClusterName: "guest"}}}
	value := func() float64 {
		return testutil.ToFloat64(m.FloatingIPReady.WithLabelValues("c-m-1", "fip", "guest"))
	}
	count := func() int { return testutil.CollectAndCount(m.FloatingIPReady) }
	handle := func(f *v1.FloatingIP) {
		t.Helper()
		if _, err := h.OnFloatingIPReadyMetric("c-m-1/fip", f); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := h.OnFloatingIPReadyMetric("c-m-1/fip", f); err != nil || count() != 1 || value() != 0 {
		t.Fatalf("no Ready condition: err %v, %d series, value %v; want one series at 0", err, count(), value())
	}
	v1.SetCondition(&f.Status, v1.Allocated, true, "Allocated", "holds 10.0.0.1")
	v1.SetReady(&f.Status)
	handle(f)
	if value() != 1 {
		t.Errorf("Ready: value %v; want 1", value())
	}
	v1.SetCondition(&f.Status, v1.GuestConfigured, false, "GuestUnreachable", "no answer")
	v1.SetReady(&f.Status)
	handle(f)
	if value() != 0 {
		t.Errorf("not Ready: value %v; want 0", value())
	}

	deleting := f.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	handle(deleting)
	if count() != 0 {
		t.Errorf("%d series while the FloatingIP is deleted; want none", count())
	}
	handle(f)
	handle(nil)
	if count() != 0 {
		t.Errorf("%d series after the FloatingIP is gone; want none", count())
	}
}

// TestKubevipInstalledMetric: kubefipoperator_floatingip_kubevip_installed has no series before a
// guest pass sets KubevipInstalled; it is 1 while the condition is True, 2 while the guest does not
// want the operator's kube-vip (NotWanted), and 0 for every other reason, refusals and failures
// alike; its series goes with the FloatingIP.
func TestKubevipInstalledMetric(t *testing.T) {
	m := metrics.New()
	h := &handler{metrics: m}
	f := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: "fip", Namespace: "c-m-1",
		Annotations: map[string]string{v1.AnnotationClusterName: "guest"}}}
	count := func() int { return testutil.CollectAndCount(m.FloatingIPKubevipInstalled) }
	handle := func(f *v1.FloatingIP) {
		t.Helper()
		if _, err := h.OnFloatingIPReadyMetric("c-m-1/fip", f); err != nil {
			t.Fatal(err)
		}
	}

	handle(f)
	if count() != 0 {
		t.Fatalf("%d series before KubevipInstalled is set; want none", count())
	}
	for _, tc := range []struct {
		ok     bool
		reason string
		want   float64
	}{
		{true, v1.ReasonInstalled, metrics.KubevipInstalledYes},
		{false, v1.ReasonImageTagMoved, metrics.KubevipInstalledNo},
		{false, v1.ReasonNotWanted, metrics.KubevipNotWanted},
		{false, v1.ReasonRenderRefused, metrics.KubevipInstalledNo},
		{false, v1.ReasonImageNotResolved, metrics.KubevipInstalledNo},
		{false, v1.ReasonHelmFailed, metrics.KubevipInstalledNo},
		{false, v1.ReasonChartFetching, metrics.KubevipInstalledNo},
	} {
		v1.SetCondition(&f.Status, v1.KubevipInstalled, tc.ok, tc.reason, "a message")
		handle(f)
		if got := testutil.ToFloat64(m.FloatingIPKubevipInstalled.WithLabelValues("c-m-1", "fip", "guest")); got != tc.want {
			t.Errorf("KubevipInstalled %v/%s: metric %v; want %v", tc.ok, tc.reason, got, tc.want)
		}
	}
	handle(nil)
	if count() != 0 {
		t.Errorf("%d series after the FloatingIP is gone; want none", count())
	}
}
