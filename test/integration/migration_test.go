package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// TestMigrationFromRangeRecords: ranges as the previous release left them — every allocation in
// status.allocations, every FloatingIP showing its address — are taken over by an operator that
// records addresses as FloatingIPAllocation objects, and no address moves:
//   - each recorded address becomes its holder's allocation object;
//   - the record wins over a FloatingIP that only asks for the same address, even an older one;
//   - a FloatingIP whose address nobody recorded is adopted from its spec, oldest first;
//   - an entry of a FloatingIP that no longer exists is released;
//   - the record is emptied, and the counts stay exact.
func TestMigrationFromRangeRecords(t *testing.T) {
	f := newFixture(t, "c-m-migrate")
	const rangeName = "migrate"
	f.createRange(rangeName, "10.146.0.0/24")
	// "early" asks for .12 before "c", which the record says holds it.
	early := f.createFIP("early", rangeName, "10.146.0.12")
	f.shard.WaitPast(t, early.CreationTimestamp)
	record := map[string]v1.Allocation{
		"10.146.0.13": {Namespace: f.ns, Name: "gone", UID: "uid-of-a-deleted-floatingip"},
	}
	for i, name := range []string{"a", "b", "c"} {
		addr := fmt.Sprintf("10.146.0.%d", 10+i)
		x := f.createFIP(name, rangeName, addr)
		x.Status.IPAddress, x.Status.Range = addr, rangeName
		if _, err := f.api.FloatingIP().UpdateStatus(x); err != nil {
			t.Fatal(err)
		}
		record[addr] = v1.Allocation{Namespace: f.ns, Name: name, UID: x.UID}
	}
	// Not recorded: adopted from its spec, as the original operator's objects are.
	f.createFIP("unrecorded", rangeName, "10.146.0.20")
	r := f.getRange(rangeName)
	r.Status.Allocations = record
	if _, err := f.api.FloatingIPRange().UpdateStatus(r); err != nil {
		t.Fatal(err)
	}

	p, _ := f.operator()
	for name, addr := range map[string]string{"a": "10.146.0.10", "b": "10.146.0.11", "c": "10.146.0.12", "unrecorded": "10.146.0.20"} {
		x := f.waitFIP(name, 30*time.Second, "kept "+addr, suite.Allocated)
		if x.Status.IPAddress != addr {
			t.Errorf("%s holds %s after the migration, want %s", name, x.Status.IPAddress, addr)
		}
	}
	x := f.waitFIP("early", 30*time.Second, "IPConflict", reasonIs("IPConflict"))
	if msg := message(x.Status.Conditions, v1.Ready); !strings.Contains(msg, f.ns+"/c") {
		t.Errorf("early's IPConflict does not name the recorded holder c: %q", msg)
	}
	if err := p.WaitForLog(context.Background(), "repair: released "+rangeName+"/10.146.0.13 "+f.ns+"/gone", 10*time.Second); err != nil {
		t.Error(err)
	}
	for _, line := range []string{rangeName + "/10.146.0.10 " + f.ns + "/a", rangeName + "/10.146.0.20 " + f.ns + "/unrecorded"} {
		if err := p.WaitForLog(context.Background(), "repair: recorded "+line, 10*time.Second); err != nil {
			t.Error(err)
		}
	}
	if _, ok := f.held(rangeName)["10.146.0.13"]; ok {
		t.Error("the entry of the deleted FloatingIP became an allocation")
	}
	if a := f.held(rangeName)["10.146.0.12"]; a.UID == early.UID {
		t.Error("early took c's recorded address")
	}
	f.waitRange(rangeName, 10*time.Second, "the record emptied", func(r *v1.FloatingIPRange) bool {
		return len(r.Status.Allocations) == 0 && r.Status.Used == 4 && r.Status.Available == "250"
	})
	f.checkRecord(rangeName, 4)
}

// TestMigrationIsIdempotent: an operator that stops right after the migration and starts again,
// or a second one that runs it at the same time, changes nothing: every allocation object is the
// same object (same UID) afterwards.
func TestMigrationIsIdempotent(t *testing.T) {
	f := newFixture(t, "c-m-migrate2")
	const rangeName = "migrate2"
	f.createRange(rangeName, "10.147.0.0/24")
	for i := range 10 {
		f.createFIP(fmt.Sprintf("fip-%02d", i), rangeName, fmt.Sprintf("10.147.0.%d", 100+i))
	}
	p1, _ := f.operator()
	p2, _ := f.operator("--leader-election=false")
	f.waitAllAllocated(10, 30*time.Second)
	objects := func() map[string]string {
		list, err := f.api.FloatingIPAllocation().List(metav1.ListOptions{LabelSelector: v1.LabelRange + "=" + rangeName})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, a := range list.Items {
			out[a.Name] = string(a.UID) + " " + string(a.Spec.Owner.UID)
		}
		return out
	}
	before := objects()
	if len(before) != 10 {
		t.Fatalf("%d allocation objects, want 10", len(before))
	}
	if err := p1.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p2.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	f.operator()
	f.waitAllAllocated(10, 30*time.Second)
	after := objects()
	for name, was := range before {
		if after[name] != was {
			t.Errorf("allocation %s was %s, is %q after a restart", name, was, after[name])
		}
	}
	f.checkRecord(rangeName, 10)
}
