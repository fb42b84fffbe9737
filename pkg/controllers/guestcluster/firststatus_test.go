package guestcluster

import (
	"testing"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/kubernetes/fake"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/controllers"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

// TestFirstStatusIsWhatThePassWrites: where Rancher's objects decide the guest's outcome, the
// allocator's first status write carries the guest fields the pass would write, with the Event the
// pass would record, and queues the pass that follows, which writes nothing and records no Event; a connected guest's FloatingIP gets nothing from the
// allocator, and its pass writes as before.
func TestFirstStatusIsWhatThePassWrites(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(w *world)
		reason string // "": the allocator adds nothing
	}{
		{"no provisioning cluster", func(w *world) { must(w.prov.Delete(testFleet, testCluster, nil)) }, v1.ReasonClusterNotFound},
		{"no management cluster", func(w *world) { must(w.mgmt.Delete(testNS, nil)) }, v1.ReasonClusterNotFound},
		{"provisioning in Rancher", func(w *world) {
			must(w.mgmt.Edit("", testNS, func(m *mgmtv3.Cluster) { m.Status.Conditions = nil }))
		}, v1.ReasonProvisioning},
		{"disconnected in Rancher", func(w *world) {
			must(w.mgmt.Edit("", testNS, func(m *mgmtv3.Cluster) { m.Status.Conditions[0].Status = corev1.ConditionFalse }))
		}, v1.ReasonDisconnected},
		{"connected", func(*world) {}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			tc.setup(w)
			c := w.controller(fakes.NewFloatingIPs(w.fips.Objects()...), fake.NewSimpleClientset().CoreV1())
			first := &controllers.FirstGuestStatus{}
			first.Set(c.firstStatus)
			// As the allocator shows the first address: the world's FloatingIP has no guest fields.
			var event *controllers.GuestEvent
			must(w.fips.Edit(testNS, testCluster+"-kubevip", func(f *v1.FloatingIP) {
				event = first.Apply(f, &f.Status)
				v1.SetReady(&f.Status)
			}))
			if queued := c.queue.Len(); (tc.reason != "") != (queued == 1) {
				t.Errorf("%d passes queued by the first status", queued)
			}
			switch {
			case tc.reason != "" && (event == nil || event.Reason != tc.reason || event.Type != v1.EventType(tc.reason)):
				t.Errorf("the Event to record with the first status is %+v, want a %s one", event, tc.reason)
			case tc.reason == "" && event != nil:
				t.Errorf("an Event for a connected guest: %+v", event)
			}
			shown := w.fip(t)
			got, _, _ := reasonOf(shown, v1.GuestConfigured)
			if got != tc.reason {
				t.Fatalf("the first status shows GuestConfigured %q, want %q", got, tc.reason)
			}
			written, events := w.pass(t, testCluster+"-kubevip")
			switch {
			case tc.reason != "" && written != nil:
				t.Errorf("the pass wrote the status again: %+v, guest state %s", written.Status.Conditions, written.Status.GuestState)
			case tc.reason != "" && len(events) > 0:
				t.Errorf("the pass recorded %v", events)
			case tc.reason == "" && written == nil:
				t.Error("the pass over a connected guest wrote nothing")
			}
			// A status that shows a guest condition already is left to the passes.
			if written != nil {
				shown = written
			}
			after := shown.Status.DeepCopy()
			first.Apply(shown, after)
			if !equality.Semantic.DeepEqual(&shown.Status, after) {
				t.Errorf("the allocator changed a status that shows a guest condition: %+v", after)
			}
		})
	}
}
