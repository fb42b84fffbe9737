package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

func rangeReady(r *v1.FloatingIPRange) bool {
	return r != nil && v1.Ready.IsTrue(r) && r.Status.ObservedGeneration == r.Generation
}

// TestRangeEdits: growing keeps every allocation; a shrink or an exclude that would orphan
// allocated addresses is flagged with the addresses named, drops nothing and stops new
// allocations until it is undone; a range with allocations is protected from deletion until they
// are released; an empty range is deleted at once.
func TestRangeEdits(t *testing.T) {
	f := newFixture(t, "c-m-edits")
	f.operator()
	f.createRange("edits", "10.145.0.0/28")
	f.createFIP("a", "edits", "10.145.0.2")
	f.createFIP("b", "edits", "10.145.0.3")
	f.waitFIP("a", 30*time.Second, "allocated", suite.Allocated)
	f.waitFIP("b", 30*time.Second, "allocated", suite.Allocated)

	// Grow.
	f.editRange("edits", func(r *v1.FloatingIPRange) { r.Spec.IPRange = "10.145.0.0/27" })
	f.waitRange("edits", 30*time.Second, "grown to 30 with 2 kept", func(r *v1.FloatingIPRange) bool {
		return rangeReady(r) && r.Status.Capacity == "30" && r.Status.Used == 2 && len(f.held("edits")) == 2
	})
	f.createFIP("c", "edits", "10.145.0.20")
	f.waitFIP("c", 30*time.Second, "10.145.0.20 in the grown range", suite.Allocated)

	// Shrink that would orphan 10.145.0.20.
	f.editRange("edits", func(r *v1.FloatingIPRange) { r.Spec.IPRange = "10.145.0.0/28" })
	r := f.waitRange("edits", 30*time.Second, "OrphanedAllocations", rangeReason("OrphanedAllocations"))
	if msg := message(r.Status.Conditions, v1.Ready); !strings.Contains(msg, "10.145.0.20") || !strings.Contains(msg, f.ns+"/c") {
		t.Errorf("the shrink condition does not name the orphaned address and holder: %q", msg)
	}
	if held := f.held("edits"); len(held) != 3 {
		t.Errorf("the refused shrink dropped allocations: %+v", held)
	}
	if !eventSoon(t, f.shard, "", "edits", corev1.EventTypeWarning, "OrphanedAllocations", "10.145.0.20") {
		t.Error("no OrphanedAllocations Warning Event on the range")
	}
	shows(t, "a shrink that would orphan an address", r, r.Status.Conditions, "OrphanedAllocations", false)
	f.createFIP("d", "edits", "")
	f.waitFIP("d", 30*time.Second, "RangeNotReady while the range is flagged", reasonIs("RangeNotReady"))
	if x := f.getFIP("c"); !suite.Allocated(x) {
		t.Errorf("the orphaned FloatingIP lost its address: %s", suite.StatusText(x))
	}

	// Undo: back to the /27; d gets an address.
	f.editRange("edits", func(r *v1.FloatingIPRange) { r.Spec.IPRange = "10.145.0.0/27" })
	f.waitRange("edits", 30*time.Second, "Ready again", rangeReady)
	f.waitFIP("d", 30*time.Second, "an address once the range is fixed", suite.Allocated)

	// Exclude that would orphan 10.145.0.3.
	f.editRange("edits", func(r *v1.FloatingIPRange) { r.Spec.Exclude = []string{"10.145.0.3"} })
	r = f.waitRange("edits", 30*time.Second, "OrphanedAllocations for the exclude", rangeReason("OrphanedAllocations"))
	if msg := message(r.Status.Conditions, v1.Ready); !strings.Contains(msg, "10.145.0.3 ("+f.ns+"/b: excluded)") {
		t.Errorf("the exclude condition does not name 10.145.0.3 and its holder: %q", msg)
	}
	if held := f.held("edits"); len(held) != 4 {
		t.Errorf("the refused exclude dropped allocations: %+v", held)
	}
	f.editRange("edits", func(r *v1.FloatingIPRange) { r.Spec.Exclude = nil })
	f.waitRange("edits", 30*time.Second, "Ready after the exclude is removed", rangeReady)

	// Delete with allocations: blocked until the FloatingIPs are gone.
	if err := f.api.FloatingIPRange().Delete("edits", nil); err != nil {
		t.Fatal(err)
	}
	r = f.waitRange("edits", 30*time.Second, "DeletionBlocked", rangeReason("DeletionBlocked"))
	if r.DeletionTimestamp == nil || !strings.Contains(message(r.Status.Conditions, v1.Ready), "4 allocated addresses") {
		t.Errorf("deletion not blocked as expected: %+v", r.Status.Conditions)
	}
	if c, ok := v1.GetCondition(r.Status.Conditions, v1.Reconciling); !ok || c.Reason != "DeletionBlocked" {
		t.Errorf("a blocked deletion: Reconciling = %+v, %v; want True with reason DeletionBlocked", c, ok)
	}
	// The recorder writes Events asynchronously: the Event may follow the status by a moment.
	rig.Eventually(t, 10*time.Second, "a Normal DeletionBlocked Event on the range", func() bool {
		return f.shard.HasEvent(t, "", "edits", corev1.EventTypeNormal, "DeletionBlocked", "4 allocated addresses")
	})
	for _, name := range []string{"a", "b", "c", "d"} {
		if err := f.api.FloatingIP().Delete(f.ns, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	f.waitRange("edits", 30*time.Second, "the range gone once its addresses are released", func(r *v1.FloatingIPRange) bool { return r == nil })

	// Delete without allocations.
	f.createRange("empty", "10.145.1.0/28")
	f.waitRange("empty", 30*time.Second, "Ready", rangeReady)
	if err := f.api.FloatingIPRange().Delete("empty", nil); err != nil {
		t.Fatal(err)
	}
	f.waitRange("empty", 30*time.Second, "the empty range gone", func(r *v1.FloatingIPRange) bool { return r == nil })
}

// TestRangeMetrics: the range gauges carry the original labels and exact values, follow
// allocations, and disappear with the range.
func TestRangeMetrics(t *testing.T) {
	f := newFixture(t, "c-m-metrics")
	_, port := f.operator()
	f.createRange("metrics", "10.147.0.0/29")
	f.createMany("fip", "metrics", 0, 4)
	f.waitAllAllocated(4, 30*time.Second)

	labels := fmt.Sprintf(`{fiprange="10.147.0.0/29",fiprangename="metrics",harvesterclustername="harvester-%s",harvesternetworkname="vlan10"}`, f.ns)
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	rig.Eventually(t, 10*time.Second, "the range gauges", func() bool {
		_, body := httpGet(t, url)
		return strings.Contains(body, "kubefipoperator_fipranges_capacity"+labels+" 6") &&
			strings.Contains(body, "kubefipoperator_fipranges_reserved"+labels+" 4") &&
			strings.Contains(body, "kubefipoperator_fipranges_available"+labels+" 2")
	})

	list, err := f.api.FloatingIP().List(f.ns, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range list.Items {
		_ = f.api.FloatingIP().Delete(f.ns, x.Name, nil)
	}
	_ = f.api.FloatingIPRange().Delete("metrics", nil)
	rig.Eventually(t, 30*time.Second, "the range's series removed", func() bool {
		_, body := httpGet(t, url)
		return !strings.Contains(body, `fiprangename="metrics"`)
	})
}
