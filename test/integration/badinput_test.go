package integration

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubefipv1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// TestBadInputMappedAddressesRefusedAtTheDoor: an IPv4-mapped IPv6 range or exclude, in any
// spelling, is refused by the API server itself, naming the field; the same text with another
// meaning (::ffff:1 is an ordinary IPv6 address) is accepted.
func TestBadInputMappedAddressesRefusedAtTheDoor(t *testing.T) {
	shard := shards.Take(t)
	c := shard.Kubefip
	for _, tc := range []struct {
		name    string
		iprange string
		exclude []string
		field   string
	}{
		{"mapped-range", "::ffff:10.0.0.0/120", nil, "spec.iprange"},
		{"mapped-range-hex", "::ffff:a00:0/120", nil, "spec.iprange"},
		{"mapped-range-long", "0:0:0:0:0:FFFF:a00:0/120", nil, "spec.iprange"},
		{"mapped-exclude", "fd00:79::/120", []string{"::ffff:10.0.0.1"}, "spec.exclude[0]"},
		{"mapped-exclude-range-end", "fd00:79::/120", []string{"fd00:79::1", "::1-::ffff:10.0.0.1"}, "spec.exclude[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.FloatingIPRange().Create(&kubefipv1.FloatingIPRange{
				ObjectMeta: metav1.ObjectMeta{Name: "badinput-" + tc.name},
				Spec:       kubefipv1.FloatingIPRangeSpec{IPRange: tc.iprange, Exclude: tc.exclude},
			})
			expectInvalid(t, err, tc.field)
			if !strings.Contains(err.Error(), "IPv4-mapped") {
				t.Errorf("error %q does not say why", err)
			}
		})
	}
	ok := &kubefipv1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: "badinput-not-mapped"},
		Spec:       kubefipv1.FloatingIPRangeSpec{IPRange: "::ffff:0:0:0/112", Exclude: []string{"::ffff:0:0:1"}},
	}
	if _, err := c.FloatingIPRange().Create(ok); err != nil {
		t.Errorf("an IPv6 range that only looks mapped was refused: %v", err)
	}
	_ = c.FloatingIPRange().Delete(ok.Name, nil)
}

// TestBadInputNonCanonicalRecord: a range's record restored with an address in another spelling
// than the operator writes ("FD00:79:0::1") still holds that address for its FloatingIP: a static
// claim of it by another FloatingIP is refused naming the holder, a dynamic one gets another
// address, the address moves from the record to its allocation object in canonical form, and
// deleting the holder releases the address rather than leaking the odd key.
func TestBadInputNonCanonicalRecord(t *testing.T) {
	f := newFixture(t, "c-m-badin01")
	const rangeName = "badinput-keys"
	holder := f.recordedByHand(rangeName, "fd00:79::/120", "FD00:79:0::1")
	f.createFIP("static", rangeName, "fd00:79::1")
	f.createFIP("dynamic", rangeName, "")

	p, _ := f.operator()
	defer func() { _ = p.Stop(20 * time.Second) }()

	f.waitFIP("holder", 30*time.Second, "the restored address", func(x *kubefipv1.FloatingIP) bool {
		return suite.Allocated(x) && x.Status.IPAddress == "fd00:79::1"
	})
	static := f.waitFIP("static", 30*time.Second, "IPConflict", reasonIs("IPConflict"))
	if msg := message(static.Status.Conditions, kubefipv1.Ready); !strings.Contains(msg, f.ns+"/holder") {
		t.Errorf("IPConflict message %q does not name the holder", msg)
	}
	dynamic := f.waitFIP("dynamic", 30*time.Second, "an address", suite.Allocated)
	if dynamic.Status.IPAddress == "fd00:79::1" {
		t.Fatalf("fd00:79::1 was handed out twice")
	}
	f.waitRange(rangeName, 30*time.Second, "the legacy record emptied", func(r *kubefipv1.FloatingIPRange) bool {
		return len(r.Status.Allocations) == 0
	})
	r, err := f.api.FloatingIPRange().Get(rangeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alloc, err := f.api.FloatingIPAllocation().Get(kubefipv1.AllocationName(kubefipv1.SpaceOf(r), netip.MustParseAddr("fd00:79::1")), metav1.GetOptions{})
	if err != nil || alloc.Spec.Owner.UID != holder.UID || alloc.Spec.Address != "fd00:79::1" {
		t.Fatalf("allocation of fd00:79::1: %+v, %v; want it held by holder (%s)", alloc, err, holder.UID)
	}
	if err := p.WaitForLog(context.Background(), "repair: recorded "+rangeName+"/fd00:79::1 "+f.ns+"/holder", 10*time.Second); err != nil {
		t.Error(err)
	}
	f.checkRecord(rangeName, 2)

	if err := f.api.FloatingIP().Delete(f.ns, "holder", nil); err != nil {
		t.Fatal(err)
	}
	// The static request gets the address once its holder is gone: released, not leaked.
	f.waitFIP("static", 30*time.Second, "fd00:79::1 after the holder is gone", func(x *kubefipv1.FloatingIP) bool {
		return suite.Allocated(x) && x.Status.IPAddress == "fd00:79::1"
	})
	f.checkRecord(rangeName, 2)
}

// TestBadInputAmbiguousRecordKey: a key that names an address ambiguously ("010.79.0.1": ten or
// eight?) is never guessed at: the range says so, hands out nothing until it is fixed, and the
// key goes with its FloatingIP.
func TestBadInputAmbiguousRecordKey(t *testing.T) {
	f := newFixture(t, "c-m-badin02")
	const rangeName = "badinput-ambiguous"
	f.recordedByHand(rangeName, "10.79.0.0/29", "010.79.0.1")
	f.createFIP("static", rangeName, "10.79.0.1")

	p, _ := f.operator()
	defer func() { _ = p.Stop(20 * time.Second) }()

	f.waitRange(rangeName, 30*time.Second, "OrphanedAllocations naming the key", func(r *kubefipv1.FloatingIPRange) bool {
		return rangeReason("OrphanedAllocations")(r) && strings.Contains(message(r.Status.Conditions, kubefipv1.Ready), "010.79.0.1")
	})
	f.waitFIP("static", 30*time.Second, "RangeNotReady", reasonIs("RangeNotReady"))
	if x := f.getFIP("holder"); x.Status.IPAddress != "" {
		t.Errorf("holder shows %s from an ambiguous key", x.Status.IPAddress)
	}

	if err := f.api.FloatingIP().Delete(f.ns, "holder", nil); err != nil {
		t.Fatal(err)
	}
	f.waitRange(rangeName, 30*time.Second, "the key gone with its FloatingIP", func(r *kubefipv1.FloatingIPRange) bool {
		_, ok := r.Status.Allocations["010.79.0.1"]
		return !ok && rangeReady(r)
	})
	f.waitFIP("static", 30*time.Second, "10.79.0.1", func(x *kubefipv1.FloatingIP) bool {
		return suite.Allocated(x) && x.Status.IPAddress == "10.79.0.1"
	})
}

// TestBadInputRangeWarnings: a range of the whole address space, and one whose excludes leave
// nothing, are accepted but carry a Warning condition with a reason and a Warning Event; fixing
// the range takes the warning away.
func TestBadInputRangeWarnings(t *testing.T) {
	f := newFixture(t, "c-m-badin03")
	f.createRange("badinput-all-v4", "0.0.0.0/0")
	f.createRange("badinput-all-v6", "::/0")
	f.createRange("badinput-empty", "10.80.0.0/30", "10.80.0.1-10.80.0.2")

	p, _ := f.operator()
	defer func() { _ = p.Stop(20 * time.Second) }()

	warned := func(reason string) func(*kubefipv1.FloatingIPRange) bool {
		return func(r *kubefipv1.FloatingIPRange) bool {
			c, ok := kubefipv1.GetCondition(r.Status.Conditions, kubefipv1.Warning)
			return r != nil && ok && c.Status == corev1.ConditionTrue && c.Reason == reason && c.Message != ""
		}
	}
	for name, reason := range map[string]string{
		"badinput-all-v4": "WholeAddressSpace",
		"badinput-all-v6": "WholeAddressSpace",
		"badinput-empty":  "NoCapacity",
	} {
		f.waitRange(name, 30*time.Second, "Warning "+reason, warned(reason))
		rig.Eventually(t, 10*time.Second, "range "+name+": a Warning Event "+reason, func() bool {
			return f.shard.HasEvent(t, "", name, corev1.EventTypeWarning, reason, "")
		})
	}

	f.editRange("badinput-empty", func(r *kubefipv1.FloatingIPRange) { r.Spec.Exclude = []string{"10.80.0.1"} })
	// The fixture's Harvester cluster is known to Rancher by name only, so the range may also
	// warn that it cannot be read; NoCapacity must be gone from the warnings.
	f.waitRange("badinput-empty", 30*time.Second, "the NoCapacity warning gone", func(r *kubefipv1.FloatingIPRange) bool {
		c, ok := kubefipv1.GetCondition(r.Status.Conditions, kubefipv1.Warning)
		return (!ok || c.Reason != "NoCapacity" && !strings.Contains(c.Message, "nothing")) && r.Status.ObservedGeneration == r.Generation
	})
}
