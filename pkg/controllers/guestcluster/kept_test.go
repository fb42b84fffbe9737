package guestcluster

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

// fakeKept is the allocation index's kept addresses of the world's cluster: Renew and ReleaseKept
// change them as the manager would, and are counted.
type fakeKept struct {
	cluster  v1.ClusterReference
	list     []allocation.Kept
	renewed  []allocation.Kept
	released []netip.Addr
}

func (k *fakeKept) RetainedFor(c v1.ClusterReference) []allocation.Kept {
	if k == nil || c != k.cluster {
		return nil
	}
	return slices.Clone(k.list)
}

func (k *fakeKept) Renew(x allocation.Kept, until time.Time, by string) error {
	for i := range k.list {
		if k.list[i].Addr == x.Addr {
			k.list[i].Until, k.list[i].ServedBy = until, by
			k.renewed = append(k.renewed, k.list[i])
		}
	}
	return nil
}

func (k *fakeKept) ReleaseKept(x allocation.Kept) error {
	k.list = slices.DeleteFunc(k.list, func(e allocation.Kept) bool { return e.Addr == x.Addr })
	k.released = append(k.released, x.Addr)
	return nil
}

// worldAlloc is the world's allocation index: what each FloatingIP holds, and what is kept.
type worldAlloc struct {
	holds
	kept *fakeKept
}

func (a worldAlloc) RetainedFor(c v1.ClusterReference) []allocation.Kept {
	return a.kept.RetainedFor(c)
}
func (a worldAlloc) Renew(k allocation.Kept, until time.Time, by string) error {
	return a.kept.Renew(k, until, by)
}
func (a worldAlloc) ReleaseKept(k allocation.Kept) error { return a.kept.ReleaseKept(k) }

const keptAddr = "10.0.0.9"

// keptWorld is the world with keptAddr, which the cluster's FloatingIP gave up, kept for the
// cluster: while served (whileServed) or for its return, until until.
func keptWorld(whileServed bool, until time.Time) *world {
	w := newWorld()
	w.kept = &fakeKept{cluster: v1.ClusterReference{Namespace: testFleet, Name: testCluster}, list: []allocation.Kept{{
		Addr: netip.MustParseAddr(keptAddr), Range: "old", Allocation: "kept-alloc", WhileServed: whileServed, Until: until,
		Last: v1.FloatingIPReference{Namespace: testNS, Name: testCluster + "-kubevip", UID: "fip-uid"}}}}
	return w
}

// serviceAsking answers the guest's read with one Service asking for addr, holding it when holds,
// the read stopped short when limited.
func serviceAsking(addr string, holds bool, limited string) func(string) (kubevipconfig.Serving, error) {
	return func(string) (kubevipconfig.Serving, error) {
		svc := kubevipconfig.ServiceState{Namespace: "default", Name: "ingress", Asks: []netip.Addr{netip.MustParseAddr(addr)}}
		if holds {
			svc.Holds = svc.Asks
		}
		return kubevipconfig.Serving{Services: []kubevipconfig.ServiceState{svc}, Limited: limited}, nil
	}
}

// TestKeptAddressPassStep: the guest pass asks the guest about the addresses kept for its cluster
// besides its own, and judges each by what it read.
func TestKeptAddressPassStep(t *testing.T) {
	soon := time.Now().Add(time.Hour)             // less than half of the default 24h hold left
	later := time.Now().Add(23 * time.Hour)       // more than half left
	sticky := time.Now().Add(30 * 24 * time.Hour) // a long retention for the cluster's return
	for _, tc := range []struct {
		name        string
		whileServed bool
		until       time.Time
		serving     func(string) (kubevipconfig.Serving, error)
		released    bool
		renewed     bool
		event       string
	}{
		{"no Service asks for it: released", true, later, nil, true, false, "Normal KeptAddressReleased"},
		{"a Service holds it, little time left: kept longer", true, soon, serviceAsking(keptAddr, true, ""), false, true, ""},
		{"a Service asks for it, little time left: kept longer", true, soon, serviceAsking(keptAddr, false, ""), false, true, ""},
		{"a Service holds it, time enough, first read: the Services recorded", true, later, serviceAsking(keptAddr, true, ""), false, true, ""},
		{"a Service holds it, time enough, the same Services: no write", true, later, serviceAsking(keptAddr, true, ""), false, false, ""},
		{"nothing asks for it, the read stopped short: left to its time", true, soon, serviceAsking("10.0.0.99", true, "the guest has more than 200 kube-vip Services"), false, false, ""},
		{"the read failed: left to its time", true, soon, func(string) (kubevipconfig.Serving, error) {
			return kubevipconfig.Serving{}, errors.New("the guest did not answer")
		}, false, false, ""},
		{"kept for the cluster's return, not served: left to its time", false, soon, nil, false, false, ""},
		{"kept for the cluster's return, served, time enough: no write", false, sticky, serviceAsking(keptAddr, true, ""), false, false, ""},
		{"kept for the cluster's return, served, little time left: kept longer", false, soon, serviceAsking(keptAddr, true, ""), false, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := keptWorld(tc.whileServed, tc.until)
			if strings.HasSuffix(tc.name, "no write") {
				w.kept.list[0].ServedBy = "default/ingress"
			}
			w.guest.serving = tc.serving
			f, events := w.pass(t, testCluster+"-kubevip")
			if len(w.guest.asked) != 1 || !slices.Contains(w.guest.asked[0], netip.MustParseAddr(keptAddr)) || !slices.Contains(w.guest.asked[0], netip.MustParseAddr(testAddr)) {
				t.Fatalf("the guest was asked about %v; want its own %s and the kept %s", w.guest.asked, testAddr, keptAddr)
			}
			if got := len(w.kept.released) > 0; got != tc.released {
				t.Errorf("released %v; want %v", w.kept.released, tc.released)
			}
			if got := len(w.kept.renewed) > 0; got != tc.renewed {
				t.Errorf("renewed %+v; want a renewal %v", w.kept.renewed, tc.renewed)
			}
			for _, r := range w.kept.renewed {
				if r.ServedBy != "default/ingress" || r.Until.Before(tc.until) || r.Until.Before(time.Now().Add(23*time.Hour)) && tc.until.Before(time.Now().Add(23*time.Hour)) {
					t.Errorf("renewed until %s, servedBy %q; want at least %s and 24h from now, by default/ingress", r.Until, r.ServedBy, tc.until)
				}
			}
			found := tc.event == ""
			for _, e := range events {
				if tc.event != "" && strings.HasPrefix(e, tc.event) && strings.Contains(e, keptAddr) {
					found = true
				}
				if tc.event == "" && strings.Contains(e, v1.ReasonKeptAddressReleased) {
					t.Errorf("unexpected Event %q", e)
				}
			}
			if !found {
				t.Errorf("no Event %q naming %s among %q", tc.event, keptAddr, events)
			}
			if f == nil {
				t.Fatal("no status written")
			}
			shown := slices.ContainsFunc(f.Status.KeptAddresses, func(k v1.KeptAddress) bool {
				return k.Address == keptAddr && k.Range == "old" && k.Allocation == "kept-alloc" && k.WhileServed == tc.whileServed
			})
			if shown == tc.released {
				t.Errorf("status.keptAddresses %+v; shown %v, want %v", f.Status.KeptAddresses, shown, !tc.released)
			}
		})
	}
}

// TestKeptAddressShownWithoutTheGuest: a pass that cannot reach the guest changes nothing kept,
// and the FloatingIPs still show what is kept, with the Services that served it at the last read.
func TestKeptAddressShownWithoutTheGuest(t *testing.T) {
	w := keptWorld(true, time.Now().Add(time.Hour))
	w.kept.list[0].ServedBy = "default/ingress"
	w.secrets = nil // the kubeconfig Secret is missing: the guest is not reached
	f, _ := w.pass(t, testCluster+"-kubevip")
	if len(w.guest.asked) != 0 || len(w.kept.released) != 0 || len(w.kept.renewed) != 0 {
		t.Fatalf("asked %v, released %v, renewed %v; want nothing", w.guest.asked, w.kept.released, w.kept.renewed)
	}
	if f == nil || len(f.Status.KeptAddresses) != 1 || f.Status.KeptAddresses[0].ServedBy != "default/ingress" {
		t.Errorf("status %+v; want the kept address with its Services", f)
	}
}

// eventsOn records the Events with the objects they are on.
type eventsOn struct {
	*record.FakeRecorder
	on []runtime.Object
}

func (r *eventsOn) Event(object runtime.Object, eventtype, reason, message string) {
	r.on = append(r.on, object)
	r.FakeRecorder.Event(object, eventtype, reason, message)
}

// TestKeptAddressesOfAClusterWithoutFloatingIPs: when the cluster's last FloatingIP is gone, a
// pass still runs while addresses are kept for the cluster: it asks the guest about those alone,
// writes nothing else, releases one no Service serves (the Event on its range, which no FloatingIP
// is left to carry) and keeps one a Service serves, and comes back at the usual interval. With
// nothing kept, no pass reaches the guest and none is scheduled.
func TestKeptAddressesOfAClusterWithoutFloatingIPs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kept     bool
		serving  func(string) (kubevipconfig.Serving, error)
		noSecret bool
		asked    bool
		released bool
		after    bool
	}{
		{"no Service asks for it: released", true, nil, false, true, true, true},
		{"a Service holds it: kept", true, serviceAsking(keptAddr, true, ""), false, true, false, true},
		{"the guest cannot be reached: left to its time", true, nil, true, false, false, false},
		{"nothing kept: the guest is left alone", false, nil, false, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := keptWorld(true, time.Now().Add(time.Hour))
			if !tc.kept {
				w.kept.list = nil
			}
			if tc.noSecret {
				w.secrets = nil
			}
			w.guest.serving = tc.serving
			must(w.fips.Delete(testNS, testCluster+"-kubevip", nil))
			fips := fakes.NewFloatingIPs()
			kube := fake.NewSimpleClientset()
			for _, secret := range w.secrets {
				if _, err := kube.CoreV1().Secrets(secret.Namespace).Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			c := w.controller(fips, kube.CoreV1())
			c.Ranges = fakes.NewRanges(&v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "old"}}).Cache()
			events := &eventsOn{FakeRecorder: record.NewFakeRecorder(10)}
			c.Recorder = events
			after, err := c.sync(context.Background(), testNS)

			want := [][]netip.Addr{{netip.MustParseAddr(keptAddr)}}
			if !tc.asked {
				want = nil
			}
			if !slices.EqualFunc(w.guest.asked, want, slices.Equal) {
				t.Errorf("the guest was asked about %v; want %v", w.guest.asked, want)
			}
			if len(fips.Written) > 0 || len(w.guest.wrote) > 0 || w.guest.disabled+w.guest.restored > 0 {
				t.Errorf("wrote %d FloatingIPs, the guest's addresses %v, Harvester's kube-vip %d times; want nothing",
					len(fips.Written), w.guest.wrote, w.guest.disabled+w.guest.restored)
			}
			if got := len(w.kept.released) > 0; got != tc.released {
				t.Errorf("released %v; want %v", w.kept.released, tc.released)
			}
			if r, ok := onlyRange(events.on); tc.released && (!ok || r.Name != "old") {
				t.Errorf("the Events were on %v; want one on range old", events.on)
			}
			if !tc.released && len(events.on) > 0 {
				t.Errorf("Events on %v; want none", events.on)
			}
			if got := err == nil && after == w.cfg.OperateGuestClusterInterval; got != tc.after {
				t.Errorf("next pass after %s (err %v); want one at the usual interval: %v", after, err, tc.after)
			}
		})
	}
}

// onlyRange is the range of on, when on is one range.
func onlyRange(on []runtime.Object) (*v1.FloatingIPRange, bool) {
	if len(on) != 1 {
		return nil, false
	}
	r, ok := on[0].(*v1.FloatingIPRange)
	return r, ok
}
