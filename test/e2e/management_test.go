package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
)

// TestMetricsServiceAnswers: the chart's metrics Service answers through its ClusterIP, from the
// management cluster's node, with the operator's own series and lasso's.
func TestMetricsServiceAnswers(t *testing.T) {
	s := current(t)
	svc, err := s.mgmtKube.CoreV1().Services(operatorNS).Get(context.Background(), "kube-fip-operator-metrics", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://%s:%d/metrics", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)
	var body string
	rig.Eventually(t, time.Minute, "the metrics Service answering at "+url+" from the node", func() bool {
		body, _ = getIn(s.mgmt.NodeNamespace, url)
		return strings.Contains(body, "kubefipoperator_fipranges_capacity")
	})
	for _, series := range []string{"kubefipoperator_fipranges_capacity", "kubefipoperator_guestcluster_status", "lasso_controller_total_handler_execution"} {
		if !strings.Contains(body, series) {
			t.Errorf("%s lacks %s", url, series)
		}
	}
}

// leader is the holder of the operator's leader Lease.
func (s *suite) leader(t *testing.T) string {
	t.Helper()
	lease, err := s.mgmtKube.CoordinationV1().Leases(operatorNS).Get(context.Background(), "kube-fip-operator", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// TestLeaderHandsOver: with replicas 2 (a helm upgrade of the release, values reused), deleting
// the pod that holds the leader Lease hands leadership to the other, and allocation goes on: the
// FloatingIPs created around the hand-over all hold an address, no address twice.
func TestLeaderHandsOver(t *testing.T) {
	s := current(t)
	ctx := context.Background()
	rig.Must(t, s.upgrade(ctx, "kube-fip-operator", s.operatorChart, map[string]interface{}{"replicas": 2}, true))
	t.Cleanup(func() {
		_ = s.upgrade(ctx, "kube-fip-operator", s.operatorChart, map[string]interface{}{"replicas": 1}, true)
	})
	rig.Eventually(t, 2*time.Minute, "two operator pods Ready", func() bool {
		ready := 0
		for _, p := range s.operatorPods(t) {
			if podReady(p) {
				ready++
			}
		}
		return ready == 2
	})
	first := s.leader(t)
	if first == "" {
		t.Fatal("no pod holds the leader Lease")
	}
	ns := "e2e-handover"
	if _, err := s.mgmtKube.CoreV1().Namespaces().Create(ctx, namespace(ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rangeName := "e2e-handover"
	_, err := s.fips.FloatingIPRange().Create(&v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: rangeName},
		Spec: v1.FloatingIPRangeSpec{IPRange: "198.18.200.0/28", AllowedNamespaces: []string{ns}}})
	rig.Must(t, err)
	create := func(i int) {
		_, err := s.fips.FloatingIP().Create(&v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fip%d", i), Namespace: ns,
			Annotations: map[string]string{v1.AnnotationFloatingIPRange: rangeName}}})
		rig.Must(t, err)
	}
	for i := 0; i < 5; i++ {
		create(i)
	}
	began := time.Now()
	rig.Must(t, s.mgmtKube.CoreV1().Pods(operatorNS).Delete(ctx, strings.SplitN(first, "_", 2)[0], metav1.DeleteOptions{}))
	for i := 5; i < 10; i++ {
		create(i)
	}
	var second string
	rig.Eventually(t, 2*time.Minute, "the other pod holding the leader Lease", func() bool {
		second = s.leader(t)
		return second != "" && second != first
	})
	t.Logf("leader %s handed over to %s in %s", first, second, time.Since(began).Round(100*time.Millisecond))
	seen := map[string]string{}
	rig.Eventually(t, 2*time.Minute, "all ten FloatingIPs holding an address", func() bool {
		list, err := s.fips.FloatingIP().List(ns, metav1.ListOptions{})
		if err != nil {
			return false
		}
		held := 0
		for _, x := range list.Items {
			if x.Status.IPAddress != "" {
				held++
			}
		}
		return held == 10
	})
	list, err := s.fips.FloatingIP().List(ns, metav1.ListOptions{})
	rig.Must(t, err)
	for _, x := range list.Items {
		if other, dup := seen[x.Status.IPAddress]; dup {
			t.Errorf("%s is held by %s and %s", x.Status.IPAddress, other, x.Name)
		}
		seen[x.Status.IPAddress] = x.Name
	}
}

// TestWebhookAnswersThroughItsService: the chart's ValidatingWebhookConfiguration, unchanged, sends
// the API server to the webhook's Service, which kube-proxy forwards to the operator's pods: a
// range overlapping the guests' range is refused with the webhook's message.
func TestWebhookAnswersThroughItsService(t *testing.T) {
	s := current(t)
	vwc, err := s.mgmtKube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), "kube-fip-operator", metav1.GetOptions{})
	rig.Must(t, err)
	for _, w := range vwc.Webhooks {
		if w.ClientConfig.Service == nil || w.ClientConfig.Service.Name != "kube-fip-operator-webhook" || len(w.ClientConfig.CABundle) == 0 {
			t.Errorf("webhook %s: clientConfig %+v; want the chart's Service and the operator's CA", w.Name, w.ClientConfig.Service)
		}
	}
	guests, err := s.fips.FloatingIPRange().Get("e2e-guests", metav1.GetOptions{})
	rig.Must(t, err)
	twin := &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "e2e-guests-twin", Annotations: guests.Annotations}, Spec: guests.Spec}
	_, err = s.fips.FloatingIPRange().Create(twin)
	if err == nil || !strings.Contains(err.Error(), "denied the request") || !strings.Contains(err.Error(), "overlaps FloatingIPRange e2e-guests") {
		t.Errorf("a range overlapping e2e-guests: %v; want refused by the webhook", err)
	}
	t.Logf("refused through the Service: %v", err)
}
