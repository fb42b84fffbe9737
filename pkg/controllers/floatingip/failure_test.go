package floatingip

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	"github.com/rancher/wrangler/v2/pkg/condition"
	"github.com/rancher/wrangler/v2/pkg/generic"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	mgmtcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io/v3"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
)

// rangeCache serves one range. Only the methods the allocation manager calls are implemented;
// the embedded interfaces stay nil.
type rangeCache struct {
	kubefipcontrollers.FloatingIPRangeCache
	r *v1.FloatingIPRange
}

func (c rangeCache) Get(string) (*v1.FloatingIPRange, error) { return c.r.DeepCopy(), nil }
func (c rangeCache) List(labels.Selector) ([]*v1.FloatingIPRange, error) {
	return []*v1.FloatingIPRange{c.r.DeepCopy()}, nil
}

// clusterCache holds the management clusters named.
type clusterCache struct {
	mgmtcontrollers.ClusterCache
	names []string
}

func guestClusters(names ...string) clusterCache { return clusterCache{names: names} }

func (c clusterCache) Get(name string) (*mgmtv3.Cluster, error) {
	if slices.Contains(c.names, name) {
		return &mgmtv3.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
	}
	return nil, apierrors.NewNotFound(mgmtv3.Resource("clusters"), name)
}

type rangeController struct {
	kubefipcontrollers.FloatingIPRangeController
	cache rangeCache
}

func (c rangeController) Cache() generic.NonNamespacedCacheInterface[*v1.FloatingIPRange] {
	return c.cache
}

// failingAllocations fails every create of an allocation object with err.
type failingAllocations struct {
	kubefipcontrollers.FloatingIPAllocationController
	err error
}

func (c failingAllocations) Create(*v1.FloatingIPAllocation) (*v1.FloatingIPAllocation, error) {
	return nil, c.err
}

// fipStore records the FloatingIP status writes.
type fipStore struct {
	kubefipcontrollers.FloatingIPController
	written  []*v1.FloatingIP
	requeued int
}

func (s *fipStore) UpdateStatus(f *v1.FloatingIP) (*v1.FloatingIP, error) {
	s.written = append(s.written, f.DeepCopy())
	return f, nil
}

func (s *fipStore) EnqueueAfter(string, string, time.Duration) { s.requeued++ }

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
			cache := rangeCache{r: &v1.FloatingIPRange{
				ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "range-uid", ResourceVersion: "1"},
				Spec:       v1.FloatingIPRangeSpec{IPRange: "10.0.0.0/29"},
			}}
			fips := &fipStore{}
			recorder := record.NewFakeRecorder(10)
			h := &handler{ctx: t.Context(), fips: fips, ranges: cache, clusters: guestClusters("c-m-1"), alloc: allocation.NewManager(allocation.Deps{
				Allocations: failingAllocations{err: tc.err}, Ranges: rangeController{cache: cache},
			}, allocation.Options{}), metrics: metrics.New(), recorder: recorder}
			f := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: "fip", Namespace: "c-m-1", UID: "fip-uid",
				Annotations: map[string]string{v1.AnnotationFloatingIPRange: "r"}}}

			_, err := h.OnFloatingIPChange("c-m-1/fip", f)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v returned for a retry", err, tc.err)
			}
			if tc.wantReason == "" {
				if len(fips.written) != 0 || len(recorder.Events) != 0 {
					t.Errorf("a conflict wrote %d statuses and %d Events, want none", len(fips.written), len(recorder.Events))
				}
				return
			}
			if len(fips.written) != 1 {
				t.Fatalf("%d status writes, want 1", len(fips.written))
			}
			status := fips.written[0].Status
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
	cache := rangeCache{r: &v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "range-uid", ResourceVersion: "1"},
		Spec:       v1.FloatingIPRangeSpec{IPRange: "10.0.0.0/29"},
	}}
	fips := &fipStore{}
	recorder := record.NewFakeRecorder(10)
	exists := apierrors.NewAlreadyExists(v1.Resource("floatingipallocations"), "10.0.0.3")
	h := &handler{ctx: t.Context(), fips: fips, ranges: cache, clusters: guestClusters("c-m-1"), alloc: allocation.NewManager(allocation.Deps{
		Allocations: failingAllocations{err: exists}, Ranges: rangeController{cache: cache},
	}, allocation.Options{}), metrics: metrics.New(), recorder: recorder}
	f := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: "fip", Namespace: "c-m-1", UID: "fip-uid",
		Annotations: map[string]string{v1.AnnotationFloatingIPRange: "r"}}, Spec: v1.FloatingIPSpec{IPAddress: "10.0.0.3"}}

	if _, err := h.OnFloatingIPChange("c-m-1/fip", f); err != nil {
		t.Fatalf("err = %v, want none", err)
	}
	if fips.requeued != 1 || len(fips.written) != 0 || len(recorder.Events) != 0 {
		t.Errorf("requeued %d, %d status writes, %d Events; want 1, 0, 0", fips.requeued, len(fips.written), len(recorder.Events))
	}
}
