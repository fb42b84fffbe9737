package integration

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// TestSlash29HandsOutSixAndTheSeventhWaits: a /29 gives exactly its 6 host addresses, never the
// network or broadcast address; the 7th FloatingIP is RangeExhausted and gets an address by itself
// when one is deleted.
func TestSlash29HandsOutSixAndTheSeventhWaits(t *testing.T) {
	f := newFixture(t, "c-m-alloc29")
	f.operator()
	f.createRange("alloc29", "10.129.0.0/29")

	for i := 1; i <= 6; i++ {
		f.createFIP(fmt.Sprintf("fip-%d", i), "alloc29", "")
	}
	got := map[string]bool{}
	for i := 1; i <= 6; i++ {
		x := f.waitFIP(fmt.Sprintf("fip-%d", i), 30*time.Second, "an address", suite.Allocated)
		got[x.Spec.IPAddress] = true
	}
	for i := 1; i <= 6; i++ {
		if !got[fmt.Sprintf("10.129.0.%d", i)] {
			t.Errorf("10.129.0.%d was not handed out; got %v", i, got)
		}
	}

	f.createFIP("fip-7", "alloc29", "")
	x := f.waitFIP("fip-7", 30*time.Second, "RangeExhausted", reasonIs("RangeExhausted"))
	if x.Spec.IPAddress != "" || x.Status.IPAddress != "" {
		t.Errorf("the 7th FloatingIP shows an address: spec %q status %q", x.Spec.IPAddress, x.Status.IPAddress)
	}
	f.waitRange("alloc29", 10*time.Second, "used 6, available 0", func(r *v1.FloatingIPRange) bool {
		return r.Status.Capacity == "6" && r.Status.Used == 6 && r.Status.Available == "0"
	})
	if !eventSoon(t, f.shard, f.ns, "fip-7", corev1.EventTypeWarning, "RangeExhausted", "alloc29") {
		t.Error("no RangeExhausted Warning Event on fip-7")
	}
	shows(t, "an exhausted range", x, x.Status.Conditions, "RangeExhausted", false)

	freed := f.getFIP("fip-3").Spec.IPAddress
	if err := f.api.FloatingIP().Delete(f.ns, "fip-3", nil); err != nil {
		t.Fatal(err)
	}
	x = f.waitFIP("fip-7", 30*time.Second, "the freed address", suite.Allocated)
	if x.Spec.IPAddress != freed {
		t.Errorf("fip-7 got %s, want the freed %s", x.Spec.IPAddress, freed)
	}
	f.checkRecord("alloc29", 6)
}

// TestSameStaticAddressAtOnce: two FloatingIPs asking for one address at the same moment: exactly
// one holds it, the other is IPConflict naming the holder, and gets it once the holder is deleted.
func TestSameStaticAddressAtOnce(t *testing.T) {
	f := newFixture(t, "c-m-static")
	f.operator()
	f.createRange("static", "10.131.0.0/28")

	var wg sync.WaitGroup
	for _, name := range []string{"left", "right"} {
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			if _, err := f.api.FloatingIP().Create(f.fip(name, "static", "10.131.0.9")); err != nil {
				t.Errorf("creating %s: %v", name, err)
			}
		}(name)
	}
	wg.Wait()

	var holder, loser string
	if !rig.Within(30*time.Second, func() bool {
		holder, loser = "", ""
		for _, pair := range [][2]string{{"left", "right"}, {"right", "left"}} {
			a, b := f.getFIP(pair[0]), f.getFIP(pair[1])
			if suite.Allocated(a) && reasonIs("IPConflict")(b) {
				holder, loser = pair[0], pair[1]
			}
		}
		return holder != "" && loser != ""
	}) {
		t.Fatalf("no clear holder and loser: left %s / right %s", suite.StatusText(f.getFIP("left")), suite.StatusText(f.getFIP("right")))
	}
	msg := message(f.getFIP(loser).Status.Conditions, v1.Ready)
	if !strings.Contains(msg, f.ns+"/"+holder) {
		t.Errorf("the IPConflict message %q does not name the holder %s/%s", msg, f.ns, holder)
	}
	if f.getFIP(loser).Status.IPAddress != "" {
		t.Errorf("the loser shows an address: %s", suite.StatusText(f.getFIP(loser)))
	}

	if err := f.api.FloatingIP().Delete(f.ns, holder, nil); err != nil {
		t.Fatal(err)
	}
	x := f.waitFIP(loser, 30*time.Second, "the address after the holder left", suite.Allocated)
	if x.Status.IPAddress != "10.131.0.9" {
		t.Errorf("%s holds %s, want 10.131.0.9", loser, x.Status.IPAddress)
	}
	f.checkRecord("static", 1)
}

// TestChangeOfAddressClaimsBeforeReleasing: moving a FloatingIP to a taken address leaves it on its
// old address with IPConflict; moving it to a free one takes the new and frees the old.
func TestChangeOfAddressClaimsBeforeReleasing(t *testing.T) {
	f := newFixture(t, "c-m-move")
	f.operator()
	f.createRange("move", "10.133.0.0/28")
	f.createFIP("mover", "move", "10.133.0.2")
	f.createFIP("sitter", "move", "10.133.0.3")
	f.waitFIP("mover", 30*time.Second, "10.133.0.2", suite.Allocated)
	f.waitFIP("sitter", 30*time.Second, "10.133.0.3", suite.Allocated)

	// The operator may write mover's status at any moment: the edit is retried on a conflict, as
	// a person's kubectl edit would be.
	f.editFIPIn(f.ns, "mover", func(x *v1.FloatingIP) { x.Spec.IPAddress = "10.133.0.3" })
	x := f.waitFIP("mover", 30*time.Second, "IPConflict while keeping its old address", reasonIs("IPConflict"))
	if x.Status.IPAddress != "10.133.0.2" {
		t.Errorf("after a refused move mover shows %q, want it to keep 10.133.0.2", x.Status.IPAddress)
	}
	if held := f.held("move"); held["10.133.0.2"].Name != "mover" {
		t.Errorf("the refused move lost the old address: %+v", held)
	}

	f.editFIPIn(f.ns, "mover", func(x *v1.FloatingIP) { x.Spec.IPAddress = "10.133.0.9" })
	f.waitFIP("mover", 30*time.Second, "10.133.0.9", func(x *v1.FloatingIP) bool {
		return suite.Allocated(x) && x.Status.IPAddress == "10.133.0.9"
	})
	rig.Eventually(t, 10*time.Second, "the old address released", func() bool {
		held := f.held("move")
		_, old := held["10.133.0.2"]
		return !old && len(held) == 2
	})
	if !eventSoon(t, f.shard, f.ns, "mover", corev1.EventTypeNormal, "Released", "10.133.0.2") {
		t.Error("no Released Event for the old address")
	}
	f.checkRecord("move", 2)
}
