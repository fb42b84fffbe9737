package floatingip

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

// in moves f to namespace ns.
func in(ns string, f *v1.FloatingIP) *v1.FloatingIP {
	f.Namespace = ns
	return f
}

// TestEveryReason: each condition reason the FloatingIP handler can set, from the request that
// leads to it, with the Event it records.
func TestEveryReason(t *testing.T) {
	ranges := fakes.NewRanges(
		&v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "r-uid"}, Spec: v1.FloatingIPRangeSpec{IPRange: "10.0.0.0/29", Exclude: []string{"10.0.0.5"}}},
		&v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "full", UID: "full-uid"}, Spec: v1.FloatingIPRangeSpec{IPRange: "10.1.0.7/32"}},
		&v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "invalid", UID: "invalid-uid"}, Spec: v1.FloatingIPRangeSpec{IPRange: "10.2.0.0/33"}},
		&v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "team-uid"}, Spec: v1.FloatingIPRangeSpec{IPRange: "10.3.0.0/29", AllowedNamespaces: []string{"team-a"}}},
		&v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "capped", UID: "capped-uid"}, Spec: v1.FloatingIPRangeSpec{IPRange: "10.4.0.0/29", MaxAddressesPerCluster: 1}},
	)
	fips := fakes.NewFloatingIPs()
	recorder := record.NewFakeRecorder(100)
	h := &handler{ctx: t.Context(), fips: fips, ranges: ranges.Cache(), clusters: guestClusters("c-m-1"), alloc: allocation.NewManager(allocation.Deps{
		Allocations: fakes.NewAllocations(), Ranges: ranges,
	}, allocation.Options{}), metrics: metrics.New(), recorder: recorder}

	fip := func(name, rangeName, addr string) *v1.FloatingIP {
		f := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "c-m-1", UID: types.UID(name + "-uid"), Finalizers: []string{v1.FloatingIPFinalizer},
			Annotations: map[string]string{}}, Spec: v1.FloatingIPSpec{IPAddress: addr}}
		if rangeName != "" {
			f.Annotations[v1.AnnotationFloatingIPRange] = rangeName
		}
		return f
	}
	for _, tc := range []struct {
		name      string
		f         *v1.FloatingIP
		reason    string
		status    corev1.ConditionStatus
		event     string
		inMessage string
	}{
		{"dynamic", fip("a", "r", ""), v1.ReasonAllocated, corev1.ConditionTrue, "Normal", "holds 10.0.0.1 in FloatingIPRange r"},
		{"static", fip("b", "r", "10.0.0.3"), v1.ReasonAllocated, corev1.ConditionTrue, "Normal", "holds 10.0.0.3"},
		{"taken", fip("c", "r", "10.0.0.3"), v1.ReasonIPConflict, corev1.ConditionFalse, "Warning", "held by FloatingIP c-m-1/b"},
		{"outside", fip("d", "r", "10.9.0.1"), v1.ReasonOutOfRange, corev1.ConditionFalse, "Warning", "not inside FloatingIPRange r"},
		{"excluded", fip("e", "r", "10.0.0.5"), v1.ReasonExcluded, corev1.ConditionFalse, "Warning", "excluded"},
		{"broadcast", fip("f", "r", "10.0.0.7"), v1.ReasonReserved, corev1.ConditionFalse, "Warning", "never handed out"},
		{"no range named", fip("g", "", ""), v1.ReasonRangeNotSet, corev1.ConditionFalse, "Warning", v1.AnnotationFloatingIPRange},
		{"no such range", fip("h", "nope", ""), v1.ReasonRangeNotFound, corev1.ConditionFalse, "Normal", "FloatingIPRange nope does not exist"},
		{"invalid range", fip("i", "invalid", ""), v1.ReasonRangeNotReady, corev1.ConditionFalse, "Warning", "cannot hand out addresses"},
		{"last address", fip("j", "full", ""), v1.ReasonAllocated, corev1.ConditionTrue, "Normal", "holds 10.1.0.7"},
		{"full range", fip("k", "full", ""), v1.ReasonRangeExhausted, corev1.ConditionFalse, "Warning", "no free address"},
		{"not an address", fip("l", "r", "ten"), v1.ReasonInvalidAddress, corev1.ConditionFalse, "Warning", "not an IP address"},
		{"namespace of no guest", in("team-b", fip("m", "r", "")), v1.ReasonNamespaceNotAllowed, corev1.ConditionFalse, "Warning",
			"namespace team-b belongs to no Rancher guest cluster (no management cluster team-b) and FloatingIPRange r does not list it"},
		{"guest-like namespace without its cluster", in("c-m-2", fip("n", "r", "10.0.0.2")), v1.ReasonNamespaceNotAllowed, corev1.ConditionFalse, "Warning",
			"no management cluster c-m-2"},
		{"namespace of another range", in("team-a", fip("o", "r", "")), v1.ReasonNamespaceNotAllowed, corev1.ConditionFalse, "Warning", "FloatingIPRange r"},
		{"namespace the range allows", in("team-a", fip("p", "team", "")), v1.ReasonAllocated, corev1.ConditionTrue, "Normal", "holds 10.3.0.1"},
		{"the cluster's first of a capped range", fip("q", "capped", ""), v1.ReasonAllocated, corev1.ConditionTrue, "Normal", "holds 10.4.0.1"},
		{"the cluster at the range's cap", fip("s", "capped", ""), v1.ReasonClusterLimitReached, corev1.ConditionFalse, "Warning",
			"namespace c-m-1 hold 1 addresses of FloatingIPRange capped, its spec.maxAddressesPerCluster"},
	} {
		fips.Add(tc.f)
		before := len(fips.Written)
		if _, err := h.OnFloatingIPChange("c-m-1/"+tc.f.Name, tc.f); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(fips.Written) != before+1 {
			t.Fatalf("%s: %d status writes, want 1", tc.name, len(fips.Written)-before)
		}
		c, ok := v1.GetCondition(fips.Written[len(fips.Written)-1].Status.Conditions, v1.Allocated)
		if !ok || c.Reason != tc.reason || c.Status != tc.status || !strings.Contains(c.Message, tc.inMessage) {
			t.Errorf("%s: Allocated = %s/%s %q; want %s/%s mentioning %q", tc.name, c.Status, c.Reason, c.Message, tc.status, tc.reason, tc.inMessage)
		}
		if tc.status == corev1.ConditionFalse {
			// Waiting shows as Reconciling (with a Normal Event), a refusal as Stalled.
			want := v1.Stalled
			if tc.event == "Normal" {
				want = v1.Reconciling
			}
			if c, ok := v1.GetCondition(fips.Written[len(fips.Written)-1].Status.Conditions, want); !ok || c.Status != corev1.ConditionTrue || c.Reason != tc.reason {
				t.Errorf("%s: %s = %+v, %v; want True with reason %s", tc.name, want, c, ok, tc.reason)
			}
		}
		select {
		case e := <-recorder.Events:
			if want := fmt.Sprintf("%s %s ", tc.event, tc.reason); !strings.HasPrefix(e, want) {
				t.Errorf("%s: Event %q, want %q…", tc.name, e, want)
			}
		default:
			t.Errorf("%s: no Event", tc.name)
		}
	}

	// A FloatingIP that holds an address keeps it when its namespace stops being allowed (an
	// upgrade, a range edited), and gets no other one.
	team, _ := ranges.Cache().Get("team")
	team.Spec.AllowedNamespaces = nil
	ranges.Add(team)
	p := in("team-a", fip("p", "team", "10.3.0.1"))
	fips.Add(p)
	if _, err := h.OnFloatingIPChange("team-a/p", p); err != nil {
		t.Fatal(err)
	}
	if c, _ := v1.GetCondition(fips.Written[len(fips.Written)-1].Status.Conditions, v1.Allocated); c.Reason != v1.ReasonAllocated {
		t.Errorf("a holder whose namespace is no longer allowed: Allocated %s %q; want it kept", c.Reason, c.Message)
	}
	moved := in("team-a", fip("p", "team", "10.3.0.4"))
	fips.Add(moved)
	if _, err := h.OnFloatingIPChange("team-a/p", moved); err != nil {
		t.Fatal(err)
	}
	if c, _ := v1.GetCondition(fips.Written[len(fips.Written)-1].Status.Conditions, v1.Allocated); c.Reason != v1.ReasonNamespaceNotAllowed {
		t.Errorf("the holder asking for another address: Allocated %s %q; want %s", c.Reason, c.Message, v1.ReasonNamespaceNotAllowed)
	}
	q := in("team-a", fip("q", "team", "10.3.0.2"))
	fips.Add(q)
	if _, err := h.OnFloatingIPChange("team-a/q", q); err != nil {
		t.Fatal(err)
	}
	if c, _ := v1.GetCondition(fips.Written[len(fips.Written)-1].Status.Conditions, v1.Allocated); c.Reason != v1.ReasonNamespaceNotAllowed {
		t.Errorf("a new FloatingIP in a namespace no longer allowed: Allocated %s %q; want %s", c.Reason, c.Message, v1.ReasonNamespaceNotAllowed)
	}
	for len(recorder.Events) > 0 {
		<-recorder.Events
	}

	// Deleting a FloatingIP releases its address, once.
	a := fip("a", "r", "10.0.0.1")
	a.Status.Range = "r"
	for i := 0; i < 2; i++ {
		if _, err := h.OnFloatingIPRemove("c-m-1/a", a); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case e := <-recorder.Events:
		if !strings.HasPrefix(e, "Normal "+v1.ReasonReleased+" ") || !strings.Contains(e, "10.0.0.1") {
			t.Errorf("Event %q, want Normal %s of 10.0.0.1", e, v1.ReasonReleased)
		}
	default:
		t.Error("no Released Event")
	}
	if len(recorder.Events) != 0 {
		t.Errorf("a second removal recorded %q", <-recorder.Events)
	}
}
