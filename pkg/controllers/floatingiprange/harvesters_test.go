package floatingiprange

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

// ofHarvester is r annotated with Harvester cluster name and network vlan10.
func ofHarvester(r *v1.FloatingIPRange, name string) *v1.FloatingIPRange {
	r.Annotations = map[string]string{v1.AnnotationHarvesterClusterName: name, v1.AnnotationHarvesterNetworkName: "vlan10"}
	return r
}

func managementCluster(id, display string) *mgmtv3.Cluster {
	return &mgmtv3.Cluster{ObjectMeta: metav1.ObjectMeta{Name: id}, Spec: mgmtv3.ClusterSpec{DisplayName: display}}
}

// TestUnknownHarvesterCluster: a range whose harvesterClusterName is the display name of no
// management cluster is not Ready (UnknownHarvesterCluster, Stalled, a Warning Event) and still
// hands out addresses to FloatingIPs that name it; it turns Ready, with a Normal Event, once such a
// cluster exists. A range without the annotation, or with a problem of its own, is judged as before.
func TestUnknownHarvesterCluster(t *testing.T) {
	for _, tc := range []struct {
		name     string
		r        *v1.FloatingIPRange
		clusters []*mgmtv3.Cluster
		reason   string
	}{
		{"unknown", ofHarvester(newRange("r", "10.8.0.0/29", 0), "harv1"), []*mgmtv3.Cluster{managementCluster("c-m-other", "harv2")}, v1.ReasonUnknownHarvesterCluster},
		{"known, blanks around the names", ofHarvester(newRange("r", "10.8.0.0/29", 0), " harv1"), []*mgmtv3.Cluster{managementCluster("c-m-h1", "harv1 ")}, v1.ReasonReady},
		{"no annotation", newRange("r", "10.8.0.0/29", 0), nil, v1.ReasonReady},
		{"invalid comes first", ofHarvester(newRange("r", "10.8.0.0/33", 0), "harv1"), nil, v1.ReasonInvalidRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, api, events := rangeHandler(t, tc.r)
			h.indexHarvesters(fakes.NewManagementClusters(tc.clusters...).Cache())
			if _, err := h.OnRangeChange(tc.r.Name, tc.r.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			c, _ := v1.GetCondition(api.Written[0].Status.Conditions, v1.Ready)
			if c.Reason != tc.reason || (c.Status == corev1.ConditionTrue) != (tc.reason == v1.ReasonReady) {
				t.Errorf("Ready = %s %s %q; want reason %s", c.Status, c.Reason, c.Message, tc.reason)
			}
			if tc.reason != v1.ReasonUnknownHarvesterCluster {
				return
			}
			if !strings.Contains(c.Message, "harvesterClusterName=harv1 is the display name of no cluster in Rancher") {
				t.Errorf("Ready's message %q does not name the annotation", c.Message)
			}
			if !v1.Stalled.IsTrue(api.Written[0]) {
				t.Error("Stalled is not True: a person must act")
			}
			if e := <-events.Events; !strings.HasPrefix(e, "Warning "+v1.ReasonUnknownHarvesterCluster+" ") {
				t.Errorf("Event %q; want a Warning %s", e, v1.ReasonUnknownHarvesterCluster)
			}
			// Not Ready, but not closed: a FloatingIP that names the range gets its address.
			if _, _, err := h.alloc.Claim(context.Background(), tc.r.Name, allocation.Claimant{Owner: ipam.Owner{Namespace: "team", Name: "by-hand", UID: "uid"}}, netip.Addr{}, false); err != nil {
				t.Errorf("a claim on the range: %v; want an address", err)
			}

			// The Harvester cluster comes to Rancher: Ready, said in a Normal Event.
			h.indexHarvesters(fakes.NewManagementClusters(managementCluster("c-m-h1", "harv1")).Cache())
			if _, err := h.OnRangeChange(tc.r.Name, api.Written[0].DeepCopy()); err != nil {
				t.Fatal(err)
			}
			last := api.Written[len(api.Written)-1]
			if c, _ := v1.GetCondition(last.Status.Conditions, v1.Ready); c.Status != corev1.ConditionTrue || v1.Stalled.IsTrue(last) {
				t.Errorf("Ready = %s %s, Stalled %v; want Ready", c.Status, c.Reason, v1.Stalled.IsTrue(last))
			}
			if e := <-events.Events; !strings.HasPrefix(e, "Normal "+v1.ReasonReady+" ") {
				t.Errorf("Event %q; want a Normal %s", e, v1.ReasonReady)
			}
		})
	}
}

// TestManagementClusterWakesItsRanges: a management cluster that comes, goes or changes its
// display name runs the ranges of its old and new name, and no other; an update that keeps the
// name (a status heartbeat) runs none.
func TestManagementClusterWakesItsRanges(t *testing.T) {
	h, api, _ := rangeHandler(t, ofHarvester(newRange("a1", "10.9.0.0/29", 0), "harv-a"), ofHarvester(newRange("a2", "10.9.1.0/29", 0), "harv-a"),
		ofHarvester(newRange("b", "10.9.2.0/29", 0), "harv-b"), newRange("none", "10.9.3.0/29", time.Hour))
	h.indexHarvesters(fakes.NewManagementClusters().Cache())
	woken := func() []string {
		defer func() { api.Enqueued = nil }()
		out := slices.Clone(api.Enqueued)
		slices.Sort(out)
		return out
	}
	a, b := managementCluster("c-m-1", "harv-a"), managementCluster("c-m-1", "harv-b")
	heartbeat := a.DeepCopy()
	heartbeat.Status.Conditions = []mgmtv3.ClusterCondition{{Type: "Ready", Status: corev1.ConditionTrue}}

	h.enqueueRangesOf(a)
	if got := woken(); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Errorf("added: %v, want a1 and a2", got)
	}
	h.managementClusterUpdated(a, heartbeat)
	if got := woken(); len(got) != 0 {
		t.Errorf("a heartbeat woke %v", got)
	}
	h.managementClusterUpdated(a, b)
	if got := woken(); !slices.Equal(got, []string{"a1", "a2", "b"}) {
		t.Errorf("renamed: %v, want the ranges of both names", got)
	}
	h.enqueueRangesOf(managementCluster("c-m-2", ""))
	h.enqueueRangesOf("not a cluster")
	if got := woken(); len(got) != 0 {
		t.Errorf("a cluster without a display name woke %v", got)
	}
}
