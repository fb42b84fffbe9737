package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubefip/kube-fip-operator/test/rig"
)

func get(url string) (int, string, error) {
	resp, err := (&http.Client{Timeout: time.Second}).Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// waitFor polls url until it answers with code or a second passes.
func waitFor(t *testing.T, url string, code int) string {
	t.Helper()
	var got int
	var body string
	var err error
	if !rig.Within(5*time.Second, func() bool {
		got, body, err = get(url)
		return err == nil && got == code
	}) {
		t.Fatalf("GET %s: code %d, err %v; want %d", url, got, err, code)
	}
	return body
}

func TestServerEndpointsReadinessAndPortChange(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := New()
	s := NewServer(m, "127.0.0.1")
	go s.Run(ctx)

	first := rig.FreePort(t)
	s.SetPort(first)
	base := fmt.Sprintf("http://127.0.0.1:%d", first)
	waitFor(t, base+"/healthz", http.StatusOK)
	waitFor(t, base+"/readyz", http.StatusServiceUnavailable)
	s.SetReady(true)
	waitFor(t, base+"/readyz", http.StatusOK)

	m.SetRange(RangeLabels{Name: "r1", CIDR: "10.0.0.0/29", HarvesterCluster: "h1", HarvesterNetwork: "vlan10"}, 6, 2, 1, 3)
	body := waitFor(t, base+"/metrics", http.StatusOK)
	for _, want := range []string{
		`kubefipoperator_fipranges_capacity{fiprange="10.0.0.0/29",fiprangename="r1",harvesterclustername="h1",harvesternetworkname="vlan10"} 6`,
		`kubefipoperator_fipranges_reserved{fiprange="10.0.0.0/29",fiprangename="r1",harvesterclustername="h1",harvesternetworkname="vlan10"} 2`,
		`kubefipoperator_fipranges_available{fiprange="10.0.0.0/29",fiprangename="r1",harvesterclustername="h1",harvesternetworkname="vlan10"} 3`,
		`kubefipoperator_fipranges_retained{fiprange="10.0.0.0/29",fiprangename="r1",harvesterclustername="h1",harvesternetworkname="vlan10"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	second := rig.FreePort(t)
	s.SetPort(second)
	waitFor(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", second), http.StatusOK)
	if _, _, err := get(base + "/healthz"); err == nil {
		t.Errorf("the old port %d still answers after the move to %d", first, second)
	}
}

func TestDeleteRangeAndGuestClusterRemoveEverySeries(t *testing.T) {
	m := New()
	m.SetRange(RangeLabels{Name: "r1", CIDR: "10.0.0.0/29"}, 6, 1, 1, 4)
	m.SetRange(RangeLabels{Name: "r1", CIDR: "10.0.0.0/28"}, 14, 1, 0, 13) // after a CIDR edit
	m.SetRange(RangeLabels{Name: "r2", CIDR: "10.0.1.0/29"}, 6, 0, 0, 6)
	m.GuestClusterStatus.WithLabelValues("c1", "h1").Set(GuestClusterUp)
	m.GuestClusterEvents.WithLabelValues("c1", "h1", EventAPIConnection, StatusSuccess).Inc()
	m.GuestClusterStatus.WithLabelValues("c2", "h1").Set(GuestClusterDown)

	m.DeleteRange("r1")
	m.DeleteGuestCluster("c1")

	if n := testutil.CollectAndCount(m.RangeCapacity); n != 1 {
		t.Errorf("capacity series after deleting r1 = %d, want 1 (r2)", n)
	}
	if n := testutil.CollectAndCount(m.RangeRetained); n != 1 {
		t.Errorf("retained series after deleting r1 = %d, want 1 (r2)", n)
	}
	if n := testutil.CollectAndCount(m.GuestClusterStatus); n != 1 {
		t.Errorf("guest status series after deleting c1 = %d, want 1 (c2)", n)
	}
	if n := testutil.CollectAndCount(m.GuestClusterEvents); n != 0 {
		t.Errorf("guest event series after deleting c1 = %d, want 0", n)
	}
}
