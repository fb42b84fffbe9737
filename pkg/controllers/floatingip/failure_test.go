package floatingip

import (
	"errors"
	"strings"
	"testing"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	"github.com/rancher/wrangler/v2/pkg/condition"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	mgmtcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io/v3"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

// guestClusters is a management cluster cache holding the clusters named.
func guestClusters(names ...string) mgmtcontrollers.ClusterCache {
	clusters := fakes.NewManagementClusters()
	for _, name := range names {
		clusters.Add(&mgmtv3.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	return clusters.Cache()
}

// failingCreates are allocations whose every create fails with err.
func failingCreates(err error) *fakes.Allocations {
	allocs := fakes.NewAllocations()
	allocs.Before = func(verb string, _ *v1.FloatingIPAllocation) error {
		if verb == "create" {
			return err
		}
		return nil
	}
	return allocs
}

// TestUnexplainedFailuresReachTheObject: a claim whose allocation object cannot be created for a
// reason explain does not know — an API failure, a timeout, a huge error text — is shown on the
// FloatingIP as Ready=False with a reason and a message, with a Warning Event, and still retried;
// a conflict is only retried.
func TestUnexplainedFailuresReachTheObject(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		wantReason string
	}{
		{"too large", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), v1.ReasonAllocationFailed},
		{"API failure", apierrors.NewInternalError(errors.New("etcd is unhappy")), v1.ReasonAllocationFailed},
		{"timeout", apierrors.NewTimeoutError("request timed out", 1), v1.ReasonAllocationFailed},
		{"huge error text", apierrors.NewBadRequest(strings.Repeat("x", 1<<20)), v1.ReasonAllocationFailed},
		{"conflict", apierrors.NewConflict(v1.Resource("floatingipranges"), "r", errors.New("modified")), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ranges := fakes.NewRanges(&v1.FloatingIPRange{
				ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "range-uid", ResourceVersion: "1"},
				Spec:       v1.FloatingIPRangeSpec{IPRange: "10.0.0.0/29"},
			})
			f := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: "fip", Namespace: "c-m-1", UID: "fip-uid", Finalizers: []string{v1.FloatingIPFinalizer},
				Annotations: map[string]string{v1.AnnotationFloatingIPRange: "r"}}}
			fips := fakes.NewFloatingIPs(f)
			recorder := record.NewFakeRecorder(10)
			h := &handler{ctx: t.Context(), fips: fips, ranges: ranges.Cache(), clusters: guestClusters("c-m-1"), alloc: allocation.NewManager(allocation.Deps{
				Allocations: failingCreates(tc.err), Ranges: ranges,
			}, allocation.Options{}), metrics: metrics.New(), recorder: recorder}

			_, err := h.OnFloatingIPChange("c-m-1/fip", f)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v returned for a retry", err, tc.err)
			}
			if tc.wantReason == "" {
				if len(fips.Written) != 0 || len(recorder.Events) != 0 {
					t.Errorf("a conflict wrote %d statuses and %d Events, want none", len(fips.Written), len(recorder.Events))
				}
				return
			}
			if len(fips.Written) != 1 {
				t.Fatalf("%d status writes, want 1", len(fips.Written))
			}
			status := fips.Written[0].Status
			for _, typ := range []condition.Cond{v1.Ready, v1.Allocated} {
				c, ok := v1.GetCondition(status.Conditions, typ)
				if !ok || c.Status != corev1.ConditionFalse || c.Reason != tc.wantReason || c.Message == "" {
					t.Errorf("%s = %+v, want False/%s with a message", typ, c, tc.wantReason)
				}
				if len(c.Message) > 1024 {
					t.Errorf("%s message is %d bytes long", typ, len(c.Message))
				}
			}
			select {
			case e := <-recorder.Events:
				if !strings.HasPrefix(e, "Warning "+tc.wantReason+" ") {
					t.Errorf("Event %.200q, want a Warning %s", e, tc.wantReason)
				}
			default:
				t.Error("no Event")
			}
		})
	}
}

// TestHolderNotYetSeenIsOnlyRequeued: a static address whose allocation another writer created a
// moment ago, not yet in this process's index, is neither shown nor announced: the claim is tried
// again shortly, when the informer names the holder.
func TestHolderNotYetSeenIsOnlyRequeued(t *testing.T) {
	ranges := fakes.NewRanges(&v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "range-uid", ResourceVersion: "1"},
		Spec:       v1.FloatingIPRangeSpec{IPRange: "10.0.0.0/29"},
	})
	f := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: "fip", Namespace: "c-m-1", UID: "fip-uid", Finalizers: []string{v1.FloatingIPFinalizer},
		Annotations: map[string]string{v1.AnnotationFloatingIPRange: "r"}}, Spec: v1.FloatingIPSpec{IPAddress: "10.0.0.3"}}
	fips := fakes.NewFloatingIPs(f)
	recorder := record.NewFakeRecorder(10)
	exists := apierrors.NewAlreadyExists(v1.Resource("floatingipallocations"), "10.0.0.3")
	h := &handler{ctx: t.Context(), fips: fips, ranges: ranges.Cache(), clusters: guestClusters("c-m-1"), alloc: allocation.NewManager(allocation.Deps{
		Allocations: failingCreates(exists), Ranges: ranges,
	}, allocation.Options{}), metrics: metrics.New(), recorder: recorder}

	if _, err := h.OnFloatingIPChange("c-m-1/fip", f); err != nil {
		t.Fatalf("err = %v, want none", err)
	}
	if len(fips.Delays) != 1 || len(fips.Written) != 0 || len(recorder.Events) != 0 {
		t.Errorf("requeued %d, %d status writes, %d Events; want 1, 0, 0", len(fips.Delays), len(fips.Written), len(recorder.Events))
	}
}

// TestNothingIsClaimedBeforeTheFinalizer: a FloatingIP the remove handler could not yet put its
// finalizer on gets no address and no status: nothing may be held without the finalizer that
// releases it.
func TestNothingIsClaimedBeforeTheFinalizer(t *testing.T) {
	ranges := fakes.NewRanges(&v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "range-uid"}, Spec: v1.FloatingIPRangeSpec{IPRange: "10.0.0.0/29"}})
	f := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: "fip", Namespace: "c-m-1", UID: "fip-uid",
		Annotations: map[string]string{v1.AnnotationFloatingIPRange: "r"}}}
	fips, allocs := fakes.NewFloatingIPs(f), fakes.NewAllocations()
	h := &handler{ctx: t.Context(), fips: fips, ranges: ranges.Cache(), clusters: guestClusters("c-m-1"), alloc: allocation.NewManager(allocation.Deps{
		Allocations: allocs, Ranges: ranges,
	}, allocation.Options{}), metrics: metrics.New(), recorder: record.NewFakeRecorder(10)}
	if _, err := h.OnFloatingIPChange("c-m-1/fip", f); err != nil {
		t.Fatal(err)
	}
	if len(allocs.Objects()) != 0 || len(fips.Written) != 0 || len(fips.Updated) != 0 {
		t.Errorf("%d allocations, %d status and %d spec writes; want none", len(allocs.Objects()), len(fips.Written), len(fips.Updated))
	}
}
