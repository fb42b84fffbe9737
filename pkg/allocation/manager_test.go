package allocation

import (
	"context"
	"net/netip"
	"strconv"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
)

// storedRange is an API server for one range: status writes are guarded by resourceVersion.
type storedRange struct {
	kubefipcontrollers.FloatingIPRangeClient
	stored                   *v1.FloatingIPRange
	rv, gets, writes, denied int
}

func (s *storedRange) UpdateStatus(r *v1.FloatingIPRange) (*v1.FloatingIPRange, error) {
	if r.ResourceVersion != s.stored.ResourceVersion {
		s.denied++
		return nil, apierrors.NewConflict(schema.GroupResource{Group: v1.SchemeGroupVersion.Group, Resource: "floatingipranges"}, r.Name, nil)
	}
	s.rv++
	s.writes++
	s.stored = r.DeepCopy()
	s.stored.ResourceVersion = strconv.Itoa(s.rv)
	return s.stored.DeepCopy(), nil
}

func (s *storedRange) Get(string, metav1.GetOptions) (*v1.FloatingIPRange, error) {
	s.gets++
	return s.stored.DeepCopy(), nil
}

// laggingCache never sees a write: the informer has not delivered it yet.
type laggingCache struct {
	kubefipcontrollers.FloatingIPRangeCache
	r *v1.FloatingIPRange
}

func (c laggingCache) Get(string) (*v1.FloatingIPRange, error) { return c.r.DeepCopy(), nil }
func (c laggingCache) List(labels.Selector) ([]*v1.FloatingIPRange, error) {
	return []*v1.FloatingIPRange{c.r.DeepCopy()}, nil
}

// TestClaimsStartFromTheManagersOwnWrite: while the cache still shows the version a claim wrote
// over, the next claim starts from what was written, not from the cache: no conflict, no re-read,
// one write per claim, each claim a different address.
func TestClaimsStartFromTheManagersOwnWrite(t *testing.T) {
	r := rangeOf("r", "10.1.0.0/28", time.Now(), nil)
	r.ResourceVersion = "0"
	api := &storedRange{stored: r.DeepCopy()}
	m := NewManager(api, laggingCache{r: r})
	seen := map[netip.Addr]bool{}
	for i := 0; i < 5; i++ {
		addr, _, err := m.Claim(context.Background(), "r", owner(strconv.Itoa(i)), netip.Addr{})
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		if seen[addr] {
			t.Fatalf("claim %d got %s again", i, addr)
		}
		seen[addr] = true
	}
	if api.denied != 0 || api.gets != 0 || api.writes != 5 {
		t.Errorf("5 claims over a lagging cache: %d writes, %d conflicts, %d re-reads; want 5, 0, 0", api.writes, api.denied, api.gets)
	}

	// Someone else writes the range: the cache's version is then no longer the one written over,
	// and a claim that meets the newer version re-reads it once.
	other := api.stored.DeepCopy()
	other.Labels = map[string]string{"edited": "true"}
	api.rv++
	other.ResourceVersion = strconv.Itoa(api.rv)
	api.stored = other
	if _, _, err := m.Claim(context.Background(), "r", owner("late"), netip.Addr{}); err != nil {
		t.Fatal(err)
	}
	if api.denied != 1 || api.gets != 1 {
		t.Errorf("after another writer: %d conflicts, %d re-reads; want 1 and 1", api.denied, api.gets)
	}
}
