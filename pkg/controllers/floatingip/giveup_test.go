package floatingip

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

const givenUp = "10.0.0.3"

// guestStatus is the status a guest pass leaves on a FloatingIP holding givenUp: the address
// written to the guest (unless notWritten), GuestConfigured as configured says, and Served with
// reason, by the Services by.
func guestStatus(notWritten, configured bool, reason, by string) v1.FloatingIPStatus {
	s := v1.FloatingIPStatus{IPAddress: givenUp, Range: "r", GuestAddresses: givenUp + ",fd00::3", ServedBy: by}
	if notWritten {
		s.GuestAddresses = "10.0.0.4"
	}
	v1.SetCondition(&s, v1.GuestConfigured, configured, v1.ReasonConfigured, "written")
	if reason != "" {
		v1.SetCondition(&s, v1.Served, true, reason, "judged")
	}
	return s
}

// TestMayServe: an address given up may be served by the guest unless the guest pass never wrote
// it there, or its last read of the guest found nothing asking for it.
func TestMayServe(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status v1.FloatingIPStatus
		serves bool
		why    string
	}{
		{"never written to the guest", guestStatus(true, true, v1.ReasonServed, "default/ingress"), false, ""},
		{"read, nothing asks for it", guestStatus(false, true, v1.ReasonIdle, ""), false, ""},
		{"Idle from a pass before the guest went away", guestStatus(false, false, v1.ReasonIdle, ""), true, "may ask for or hold it"},
		{"served", guestStatus(false, true, v1.ReasonServed, "default/ingress"), true, "default/ingress held it"},
		{"asked for, not served yet", guestStatus(false, true, v1.ReasonNotServed, ""), true, "may ask for or hold it"},
		{"never read", guestStatus(false, true, "", ""), true, "may ask for or hold it"},
		{"Idle judged another address", func() v1.FloatingIPStatus {
			s := guestStatus(false, true, v1.ReasonIdle, "")
			s.IPAddress, s.GuestAddresses = "10.0.0.4", givenUp+",10.0.0.4 (ns)"
			return s
		}(), true, "may ask for or hold it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, serves := mayServe(&v1.FloatingIP{Status: tc.status}, netip.MustParseAddr(givenUp))
			if serves != tc.serves || !strings.Contains(why, tc.why) {
				t.Errorf("mayServe = %q, %v; want %v with %q", why, serves, tc.serves, tc.why)
			}
		})
	}
}

// TestGiveUpKeepsWhatTheGuestMayServe: a FloatingIP deleted while its guest runs keeps the address
// the guest may serve, in the same object, with an Event naming the address, the cluster and why;
// it is released at once when the FloatingIP names no guest cluster, its cluster is gone (no
// retention), servedAddressHold is 0, or the guest never got it.
func TestGiveUpKeepsWhatTheGuestMayServe(t *testing.T) {
	for _, tc := range []struct {
		name        string
		clusterName string
		clusterGone bool
		hold        time.Duration
		notWritten  bool
		kept        bool
	}{
		{"served by its running guest", "demo", false, time.Hour, false, true},
		{"no guest cluster named", "", false, time.Hour, false, false},
		{"the cluster is gone", "demo", true, time.Hour, false, false},
		{"servedAddressHold 0", "demo", false, 0, false, false},
		{"never written to the guest", "demo", false, time.Hour, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ranges := fakes.NewRanges(&v1.FloatingIPRange{
				ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "range-uid", ResourceVersion: "1"},
				Spec:       v1.FloatingIPRangeSpec{IPRange: "10.0.0.0/29"},
			})
			allocs := fakes.NewAllocations()
			alloc := allocation.NewManager(allocation.Deps{Allocations: allocs, Ranges: ranges}, allocation.Options{})
			f := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: "fip", Namespace: "c-m-1", UID: "fip-uid", Finalizers: []string{v1.FloatingIPFinalizer},
				Annotations: map[string]string{v1.AnnotationFloatingIPRange: "r", v1.AnnotationClusterName: tc.clusterName}},
				Status: guestStatus(tc.notWritten, true, v1.ReasonServed, "default/ingress")}
			if _, _, err := alloc.Claim(t.Context(), "r", allocation.ClaimantOf(f), netip.MustParseAddr(givenUp), false); err != nil {
				t.Fatal(err)
			}
			prov := fakes.NewProvisioningClusters()
			if !tc.clusterGone {
				prov = fakes.NewProvisioningClusters(&provv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet-default", Name: "demo"},
					Status: provv1.ClusterStatus{ClusterName: "c-m-1"}})
			}
			cfg := config.Default()
			cfg.ServedAddressHold, cfg.AddressRetention = tc.hold, 0
			recorder := record.NewFakeRecorder(10)
			h := &handler{ctx: t.Context(), fleet: "fleet-default", fips: fakes.NewFloatingIPs(f), ranges: ranges.Cache(), clusters: guestClusters("c-m-1"),
				prov: prov.Cache(), alloc: alloc, store: config.NewStore(cfg), metrics: metrics.New(), recorder: recorder}

			now := time.Now()
			if _, err := h.OnFloatingIPRemove("c-m-1/fip", f); err != nil {
				t.Fatal(err)
			}
			name := v1.AllocationName(v1.AddressSpace{}, netip.MustParseAddr(givenUp))
			a, _ := allocs.Get(name, metav1.GetOptions{})
			if kept := a != nil; kept != tc.kept {
				t.Fatalf("allocation kept %v; want %v", kept, tc.kept)
			}
			var events []string
			for len(recorder.Events) > 0 {
				events = append(events, <-recorder.Events)
			}
			if !tc.kept {
				if len(events) != 1 || !strings.HasPrefix(events[0], "Normal Released") {
					t.Errorf("Events %q; want one Released", events)
				}
				return
			}
			r := a.Spec.Retained
			want := v1.ClusterReference{Namespace: "fleet-default", Name: "demo"}
			if r == nil || !r.WhileServed || r.Cluster != want || r.Until.Time.Before(now.Add(tc.hold).Truncate(time.Second)) || r.Until.Time.After(now.Add(tc.hold+2*time.Second)) {
				t.Errorf("retention %+v; want while served for %v, until about %s", r, want, now.Add(tc.hold))
			}
			if len(events) != 1 || !strings.HasPrefix(events[0], "Normal AddressKept") ||
				!strings.Contains(events[0], givenUp) || !strings.Contains(events[0], "fleet-default/demo") || !strings.Contains(events[0], "default/ingress") {
				t.Errorf("Events %q; want one AddressKept naming the address, the cluster and the Services", events)
			}
		})
	}
}
