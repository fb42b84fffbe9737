package allocation

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

// TestKeptWhileServed: an address kept while served is the same object, never free: nobody else
// gets it (a static request is told for whom, while what, and which allocation frees it; a dynamic
// claim passes it), the FloatingIP that gave it up may ask for it again, RetainedFor lists it, and
// Renew and ReleaseKept act only on the version read.
func TestKeptWhileServed(t *testing.T) {
	ctx := context.Background()
	r := siteRange("site1", "10.9.0.0/29", "harvester1", time.Now().Add(-time.Hour)) // .1-.6
	m := benchManager([]*v1.FloatingIPRange{r})
	cluster := v1.ClusterReference{Namespace: "fleet-default", Name: "demo"}
	first := Claimant{Owner: fipOwner("first"), Cluster: cluster}
	addr := netip.MustParseAddr("10.9.0.5")
	if _, _, err := m.Claim(ctx, "site1", first, addr, false); err != nil {
		t.Fatal(err)
	}
	name := v1.AllocationName(v1.SpaceOf(r), addr)
	object := stored(apiOf(m), name).UID

	// Only the addresses named, in the range named.
	if kept, err := m.Keep(ctx, "site1", first.UID, cluster, time.Now().Add(time.Hour), netip.MustParseAddr("10.9.0.4")); err != nil || len(kept) != 0 {
		t.Fatalf("Keep of an address not held = %v, %v; want nothing", kept, err)
	}
	kept, err := m.Keep(ctx, "site1", first.UID, cluster, time.Now().Add(time.Hour), addr)
	if err != nil || len(kept) != 1 || kept[0] != addr {
		t.Fatalf("Keep = %v, %v; want %v", kept, err, addr)
	}
	a := stored(apiOf(m), name)
	if a.UID != object || a.Spec.Retained == nil || !a.Spec.Retained.WhileServed || a.Spec.Retained.Cluster != cluster || a.Labels[v1.LabelState] != StateRetained {
		t.Fatalf("kept object: %+v %v; want the same object retained while served", a.Spec, a.Labels)
	}
	if got := m.HeldBy("site1", first.UID); len(got) != 0 {
		t.Errorf("the FloatingIP that gave it up still holds %v", got)
	}
	if _, err := m.Release(ctx, "site1", first.UID); err != nil || stored(apiOf(m), name) == nil {
		t.Fatalf("a release of the FloatingIP after Keep = %v, and the kept object is gone: %v", err, stored(apiOf(m), name) == nil)
	}

	var retained *RetainedError
	_, _, err = m.Claim(ctx, "site1", who("stranger"), addr, false)
	if !errors.As(err, &retained) || !retained.WhileServed || retained.Allocation != name || !strings.Contains(err.Error(), "while its Services may serve it") {
		t.Errorf("static request for the kept address = %v; want a RetainedError while served naming %s", err, name)
	}
	for i := 0; i < 5; i++ {
		if got, _, err := m.Claim(ctx, "site1", who("x"+string(rune('1'+i))), netip.Addr{}, false); err != nil || got == addr {
			t.Fatalf("dynamic claim = %v, %v; the kept %v must be passed", got, err, addr)
		}
	}
	if _, _, err := m.Claim(ctx, "site1", who("x6"), netip.Addr{}, false); !errors.Is(err, ipam.ErrExhausted) {
		t.Errorf("with every other address held, a claim = %v; want ErrExhausted", err)
	}

	list := m.RetainedFor(cluster)
	if len(list) != 1 || list[0].Addr != addr || !list[0].WhileServed || list[0].Allocation != name || list[0].Last.UID != types.UID(first.UID) {
		t.Fatalf("RetainedFor = %+v; want the kept %v", list, addr)
	}
	if other := m.RetainedFor(v1.ClusterReference{Namespace: "fleet-default", Name: "other"}); len(other) != 0 {
		t.Errorf("RetainedFor another cluster = %+v", other)
	}
	k := list[0]
	until := time.Now().Add(48 * time.Hour)
	if err := m.Renew(k, until, "default/ingress"); err != nil {
		t.Fatal(err)
	}
	a = stored(apiOf(m), name)
	if a.Spec.Retained.ServedBy != "default/ingress" || a.Spec.Retained.Until.Time.Before(until.Truncate(time.Second)) || !a.Spec.Retained.WhileServed {
		t.Errorf("renewed: %+v", a.Spec.Retained)
	}
	// The version read before the renewal is stale: neither a second renewal nor a release acts.
	if err := m.Renew(k, until, "x/y"); !errors.Is(err, ErrKeptChanged) {
		t.Errorf("Renew of a stale version = %v; want ErrKeptChanged", err)
	}
	if err := m.ReleaseKept(k); !errors.Is(err, ErrKeptChanged) || stored(apiOf(m), name) == nil {
		t.Errorf("ReleaseKept of a stale version = %v; want ErrKeptChanged and the object kept", err)
	}
	if got := m.RetainedFor(cluster); len(got) != 1 || got[0].ServedBy != "default/ingress" {
		t.Fatalf("RetainedFor after the renewal = %+v", got)
	}
	if err := m.ReleaseKept(m.RetainedFor(cluster)[0]); err != nil || stored(apiOf(m), name) != nil {
		t.Fatalf("ReleaseKept = %v; want the object deleted", err)
	}
	if got, _, err := m.Claim(ctx, "site1", who("x6"), netip.Addr{}, false); err != nil || got != addr {
		t.Errorf("a claim once released = %v, %v; want %v", got, err, addr)
	}
}

// TestKeptGoesBackToWhoGaveItUp: the FloatingIP that gave an address up (its spec changed back)
// takes it back, as the same object, whether or not it names the cluster; one that was retained
// for a deleted cluster is not taken back by the FloatingIP that left.
func TestKeptGoesBackToWhoGaveItUp(t *testing.T) {
	ctx := context.Background()
	r := siteRange("site1", "10.9.0.0/29", "harvester1", time.Now().Add(-time.Hour))
	m := benchManager([]*v1.FloatingIPRange{r})
	cluster := v1.ClusterReference{Namespace: "fleet-default", Name: "demo"}
	for _, c := range []Claimant{who("handmade"), {Owner: fipOwner("made"), Cluster: cluster}} {
		addr, _, err := m.Claim(ctx, "site1", c, netip.Addr{}, false)
		if err != nil {
			t.Fatal(err)
		}
		object := stored(apiOf(m), v1.AllocationName(v1.SpaceOf(r), addr)).UID
		if kept, err := m.Keep(ctx, "site1", c.UID, cluster, time.Now().Add(time.Hour)); err != nil || len(kept) != 1 {
			t.Fatalf("Keep = %v, %v", kept, err)
		}
		got, _, err := m.Claim(ctx, "site1", c, addr, false)
		a := stored(apiOf(m), v1.AllocationName(v1.SpaceOf(r), addr))
		if err != nil || got != addr || a.UID != object || a.Spec.Retained != nil || a.Spec.Owner.UID != types.UID(c.UID) {
			t.Errorf("%s asking again = %v, %v, %+v; want %v back as the same object", c.Name, got, err, a.Spec, addr)
		}
	}
	sticky := Claimant{Owner: fipOwner("left"), Cluster: cluster}
	addr, _, err := m.Claim(ctx, "site1", sticky, netip.Addr{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Retain(ctx, sticky.UID, cluster, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var retained *RetainedError
	if _, _, err := m.Claim(ctx, "site1", sticky, addr, false); !errors.As(err, &retained) || retained.WhileServed {
		t.Errorf("the FloatingIP that left asking for its retained address = %v; want a RetainedError", err)
	}
}
