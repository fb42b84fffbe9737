package floatingiprange

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

// TestStatusWriteFailureReachesTheRange: a status write the API server refuses for a reason of
// its own shows on the range as Ready=False, reason StatusUpdateFailed, with a Warning Event and a
// bounded message, once per distinct failure; a conflict or a vanished range is the ordinary race
// of a cache and shows nothing.
func TestStatusWriteFailureReachesTheRange(t *testing.T) {
	gr := schema.GroupResource{Group: v1.SchemeGroupVersion.Group, Resource: "floatingipranges"}
	huge := errors.New("etcdserver: request is too large: " + strings.Repeat("x", 1<<20))
	for _, tc := range []struct {
		name  string
		err   error
		shown bool
	}{
		{"server error", apierrors.NewInternalError(errors.New("etcd is down")), true},
		{"huge error text", huge, true},
		{"conflict", apierrors.NewConflict(gr, "r", errors.New("changed")), false},
		{"gone", apierrors.NewNotFound(gr, "r"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "r"}}
			writes := fakes.NewRanges(r)
			events := record.NewFakeRecorder(10)
			h := &handler{ranges: writes, recorder: events}
			h.statusFailed(r, tc.err)
			if !tc.shown {
				if len(writes.Written) != 0 || len(events.Events) != 0 {
					t.Errorf("%d writes, %d Events; want none", len(writes.Written), len(events.Events))
				}
				return
			}
			if len(writes.Written) != 1 {
				t.Fatalf("%d status writes; want 1", len(writes.Written))
			}
			c, ok := v1.GetCondition(writes.Written[0].Status.Conditions, v1.Ready)
			if !ok || c.Status != "False" || c.Reason != v1.ReasonStatusUpdateFailed {
				t.Errorf("Ready = %+v; want False, %s", c, v1.ReasonStatusUpdateFailed)
			}
			if len(c.Message) > 400 {
				t.Errorf("the condition repeats %d bytes of the error; want it capped", len(c.Message))
			}
			if ev := <-events.Events; !strings.HasPrefix(ev, "Warning "+v1.ReasonStatusUpdateFailed) || len(ev) > 450 {
				t.Errorf("Event %.120q (%d bytes); want a bounded Warning %s", ev, len(ev), v1.ReasonStatusUpdateFailed)
			}
			// The same failure again, on the range as it now shows: nothing new.
			h.statusFailed(writes.Written[0], tc.err)
			if len(writes.Written) != 1 || len(events.Events) != 0 {
				t.Errorf("a repeated failure wrote %d times and sent %d more Events; want nothing new", len(writes.Written)-1, len(events.Events))
			}
		})
	}
}
