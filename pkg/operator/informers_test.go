package operator

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kubefip/kube-fip-operator/pkg/controllers"
)

// fakeCaches stands in for lasso's shared cache factory: WaitForCacheSync answers synced as given.
type fakeCaches struct {
	started bool
	synced  map[schema.GroupVersionKind]bool
}

func (f *fakeCaches) Start(context.Context) error { f.started = true; return nil }
func (f *fakeCaches) WaitForCacheSync(context.Context) map[schema.GroupVersionKind]bool {
	return f.synced
}

// fakeInformer syncs as soon as it runs, or never.
type fakeInformer struct {
	cache.SharedIndexInformer
	syncs  bool
	ran    chan struct{}
	synced atomic.Bool
}

func newFakeInformer(syncs bool) *fakeInformer {
	return &fakeInformer{syncs: syncs, ran: make(chan struct{})}
}

func (f *fakeInformer) Run(stop <-chan struct{}) {
	f.synced.Store(f.syncs)
	close(f.ran)
	<-stop
}
func (f *fakeInformer) HasSynced() bool { return f.synced.Load() }

var harvesterConfigs = schema.GroupVersionResource{Group: "rke-machine-config.cattle.io", Version: "v1", Resource: "harvesterconfigs"}

func served(resources ...*metav1.APIResourceList) *fakediscovery.FakeDiscovery {
	return &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: resources}}
}

// TestStartInformersWaitsForEveryInformer: every shared cache and every handed-over informer is
// started and waited for; the error of a sync that did not complete names each informer that did
// not sync, a shared cache's result included however many others synced.
func TestStartInformersWaitsForEveryInformer(t *testing.T) {
	fip := schema.GroupVersionKind{Group: "kubefip.k8s.binbash.org", Version: "v1", Kind: "FloatingIP"}
	clusters := schema.GroupVersionKind{Group: "provisioning.cattle.io", Version: "v1", Kind: "Cluster"}
	shared := &fakeCaches{synced: map[schema.GroupVersionKind]bool{fip: true, clusters: false}}
	synced, stuck := newFakeInformer(true), newFakeInformer(false)
	informers := []controllers.Informer{{Name: "Synced things", Informer: synced}, {Name: "Stuck things", Informer: stuck}}

	// The context ends only once both informers ran: the stuck one then never syncs.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-synced.ran; <-stuck.ran; cancel() }()
	err := startInformers(ctx, shared, served(), informers)
	if !shared.started {
		t.Error("the shared caches were not started")
	}
	if err == nil {
		t.Fatal("no error, though a shared cache and an informer did not sync")
	}
	for _, want := range []string{clusters.String(), "Stuck things"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	for _, not := range []string{fip.String(), "Synced things"} {
		if strings.Contains(err.Error(), not) {
			t.Errorf("error %q names %s, which synced", err, not)
		}
	}
}

// TestStartInformersOptional: an optional informer whose resource is not served runs but is not
// waited for; once served, it is waited for like any other.
func TestStartInformersOptional(t *testing.T) {
	shared := &fakeCaches{}
	t.Run("not served", func(t *testing.T) {
		inf := newFakeInformer(false)
		var c controllers.Context
		c.AddOptionalInformer("HarvesterConfigs", harvesterConfigs, inf)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Another kind of the same group is served, but not this one.
		other := &metav1.APIResourceList{GroupVersion: harvesterConfigs.GroupVersion().String(), APIResources: []metav1.APIResource{{Name: "amazonec2configs"}}}
		if err := startInformers(ctx, shared, served(other), c.Informers()); err != nil {
			t.Fatalf("start: %v", err)
		}
		<-inf.ran // run all the same, so that a CRD installed later is seen
	})
	t.Run("served", func(t *testing.T) {
		inf := newFakeInformer(false)
		var c controllers.Context
		c.AddOptionalInformer("HarvesterConfigs", harvesterConfigs, inf)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-inf.ran; cancel() }()
		list := &metav1.APIResourceList{GroupVersion: harvesterConfigs.GroupVersion().String(), APIResources: []metav1.APIResource{{Name: "harvesterconfigs"}}}
		err := startInformers(ctx, shared, served(list), c.Informers())
		if err == nil || !strings.Contains(err.Error(), "HarvesterConfigs") {
			t.Fatalf("error %v, want one naming HarvesterConfigs, which never synced", err)
		}
	})
}
