package integration

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/metawrite"
)

// answerKinds records the kind of every answer of the API server to a write.
type answerKinds struct {
	next  http.RoundTripper
	mu    sync.Mutex
	kinds []string
}

func (a *answerKinds) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(req)
	if err != nil || req.Method == http.MethodGet {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var answer metav1.TypeMeta
	_ = json.Unmarshal(body, &answer)
	a.mu.Lock()
	a.kinds = append(a.kinds, answer.Kind)
	a.mu.Unlock()
	return resp, nil
}

// TestWritesReadBackOnlyMetadata: the operator's creates of FloatingIPs and allocation objects
// and its FloatingIP status writes are answered with the object's metadata alone, and what the
// writer returns is the object the API server then holds — same metadata, same spec and status —
// while a refused write is the typed error every caller relies on (AlreadyExists for a claimed
// address, Conflict for a stale status).
func TestWritesReadBackOnlyMetadata(t *testing.T) {
	f := newFixture(t, "metawrite")
	answers := &answerKinds{}
	cfg := rest.CopyConfig(f.shard.Env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { answers.next = rt; return answers })
	w, err := metawrite.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fips := metawrite.FloatingIPs{FloatingIPController: f.api.FloatingIP(), W: w}
	allocs := metawrite.Allocations{FloatingIPAllocationController: f.api.FloatingIPAllocation(), W: w}

	created, err := fips.Create(f.fip("fip-meta", "meta", ""))
	if err != nil {
		t.Fatal(err)
	}
	stored := f.getFIP("fip-meta")
	sameObject(t, "created FloatingIP", created.ObjectMeta, stored.ObjectMeta, created.Spec, stored.Spec)

	next := created.DeepCopy()
	v1.SetCondition(&next.Status, v1.Allocated, true, "Allocated", "holds 10.0.0.1")
	next.Status.IPAddress = "10.0.0.1"
	written, err := fips.UpdateStatus(next)
	if err != nil {
		t.Fatal(err)
	}
	stored = f.getFIP("fip-meta")
	sameObject(t, "FloatingIP status", written.ObjectMeta, stored.ObjectMeta, written.Status, stored.Status)
	if written.ResourceVersion == created.ResourceVersion {
		t.Errorf("the status write returned the resourceVersion it was given (%s)", created.ResourceVersion)
	}
	// The object it was given, stale now: refused as a conflict.
	if _, err := fips.UpdateStatus(next); !apierrors.IsConflict(err) {
		t.Errorf("a status write at a stale resourceVersion: %v, want a Conflict", err)
	}

	space := v1.AddressSpace{HarvesterClusterName: "harv-meta", HarvesterNetworkName: "vlan1"}
	addr := netip.MustParseAddr("10.0.0.1")
	a := &v1.FloatingIPAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: v1.AllocationName(space, addr)},
		Spec: v1.FloatingIPAllocationSpec{Address: addr.String(), Range: "meta", Space: space,
			Owner: v1.FloatingIPReference{Namespace: f.ns, Name: written.Name, UID: written.UID}},
	}
	claimed, err := allocs.Create(a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.api.FloatingIPAllocation().Delete(a.Name, nil) })
	storedAlloc, err := f.api.FloatingIPAllocation().Get(a.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameObject(t, "allocation", claimed.ObjectMeta, storedAlloc.ObjectMeta, claimed.Spec, storedAlloc.Spec)
	if _, err := allocs.Create(a); !apierrors.IsAlreadyExists(err) {
		t.Errorf("claiming a claimed address again: %v, want AlreadyExists", err)
	}

	answers.mu.Lock()
	defer answers.mu.Unlock()
	// Three writes succeeded, each answered with its metadata alone; the two refused ones are
	// answered with a Status.
	want := []string{"PartialObjectMetadata", "PartialObjectMetadata", "Status", "PartialObjectMetadata", "Status"}
	if !slices.Equal(answers.kinds, want) {
		t.Errorf("the API server answered %q, want %q", answers.kinds, want)
	}
}

// sameObject holds what a write returned to what the API server holds: the metadata but for the
// managed fields (which the informer's cache drops too), and the part the write was about.
func sameObject(t *testing.T, what string, got, want metav1.ObjectMeta, gotPart, wantPart interface{}) {
	t.Helper()
	got.ManagedFields, want.ManagedFields = nil, nil
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s: returned metadata %+v, the API server holds %+v", what, got, want)
	}
	if !equality.Semantic.DeepEqual(gotPart, wantPart) {
		t.Errorf("%s: returned %+v, the API server holds %+v", what, gotPart, wantPart)
	}
}
