package integration

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// selectionRange creates a range of the fixture on Harvester cluster display's network vlan10,
// with spec edited by edit.
func (f *fixture) selectionRange(name, cidr, display string, edit func(*v1.FloatingIPRangeSpec)) {
	f.t.Helper()
	f.knownHarvester(display)
	r := &v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			v1.AnnotationHarvesterClusterName: display,
			v1.AnnotationHarvesterNetworkName: "vlan10",
		}},
		Spec: v1.FloatingIPRangeSpec{IPRange: cidr},
	}
	if edit != nil {
		edit(&r.Spec)
	}
	if _, err := f.api.FloatingIPRange().Create(r); err != nil {
		f.t.Fatalf("creating range %s: %v", name, err)
	}
	f.ranges = append(f.ranges, name)
}

// harvesterGuest is guest cluster name (namespace c-m-<name>) on Harvester cluster display's
// network vlan10, its provisioning cluster labelled labels.
func harvesterGuest(name, display string, labels map[string]string) rancher.Guest {
	return rancher.Guest{Name: name, ID: "c-m-" + name, Harvester: "c-m-h" + display, Display: display,
		Network: rancher.Network("vlan10"), Labels: labels}
}

// inRange tells whether the FloatingIP holds an address of range name, as its status, its
// annotation and its address all say.
func inRange(name, cidr string) func(*v1.FloatingIP) bool {
	p := netip.MustParsePrefix(cidr)
	return func(x *v1.FloatingIP) bool {
		a, err := netip.ParseAddr(x.Status.IPAddress)
		return suite.Allocated(x) && x.Status.Range == name && x.Annotations[v1.AnnotationFloatingIPRange] == name &&
			err == nil && p.Contains(a)
	}
}

// TestRangeOverflow: with a full first range, a new guest cluster takes its address from the next
// range of its network, and a FloatingIP waiting in RangeExhausted moves to a range created for
// the network, with a RangeChanged Event and an Allocated message naming the range it left.
func TestRangeOverflow(t *testing.T) {
	f := newFixture(t, "kube-fip-sel-overflow")
	r := f.shard.Rancher(t)
	f.operator()
	f.selectionRange("ovf-a-small", "10.171.0.0/30", "harv-ovf", nil) // .1 and .2

	var guests []rancher.Guest
	for i := 0; i < 3; i++ {
		g := harvesterGuest(fmt.Sprintf("ovf%d", i), "harv-ovf", nil)
		rig.Must(t, r.AddGuest(g))
		guests = append(guests, g)
	}
	for _, g := range guests[:2] {
		x := suite.WaitFIP(t, r.FIPs, g.ID, g.Name+"-kubevip", time.Minute)
		if !inRange("ovf-a-small", "10.171.0.0/30")(x) {
			t.Fatalf("%s: %s", g.Name, suite.StatusText(x))
		}
	}
	waiting := guests[2]
	f.waitFIPIn(waiting.ID, waiting.Name+"-kubevip", time.Minute, "RangeExhausted naming the full range", func(x *v1.FloatingIP) bool {
		return reasonIs(v1.ReasonRangeExhausted)(x) && strings.Contains(message(x.Status.Conditions, v1.Allocated), "ovf-a-small")
	})

	// Another range of the same network: the waiting FloatingIP moves to it.
	f.selectionRange("ovf-b-big", "10.171.1.0/24", "harv-ovf", nil)
	x := f.waitFIPIn(waiting.ID, waiting.Name+"-kubevip", 30*time.Second, "an address of ovf-b-big", inRange("ovf-b-big", "10.171.1.0/24"))
	if msg := message(x.Status.Conditions, v1.Allocated); !strings.Contains(msg, "ovf-a-small has no free address") {
		t.Errorf("Allocated says %q; want it to say why ovf-a-small was passed over", msg)
	}
	if !eventSoon(t, f.shard, waiting.ID, x.Name, corev1.EventTypeNormal, v1.ReasonRangeChanged, "from FloatingIPRange ovf-a-small to ovf-b-big") {
		t.Errorf("no Normal RangeChanged Event on %s/%s", waiting.ID, x.Name)
	}
	if held := suite.HeldIn(t, f.api, "ovf-a-small"); len(held) != 2 {
		t.Errorf("ovf-a-small holds %d addresses, want its 2 (the waiting FloatingIP left nothing there)", len(held))
	}

	// A new guest cluster goes to the range with room at once.
	g := harvesterGuest("ovf3", "harv-ovf", nil)
	rig.Must(t, r.AddGuest(g))
	x = suite.WaitFIP(t, r.FIPs, g.ID, g.Name+"-kubevip", time.Minute)
	if !inRange("ovf-b-big", "10.171.1.0/24")(x) {
		t.Fatalf("new guest %s: %s, want an address of ovf-b-big", g.Name, suite.StatusText(x))
	}
	if !eventSoon(t, f.shard, rancher.FleetNamespace, g.Name, corev1.EventTypeNormal, v1.ReasonFloatingIPCreated, "ovf-a-small has no free address") {
		t.Errorf("the FloatingIPCreated Event of %s does not say why ovf-a-small was passed over", g.Name)
	}
}

// TestRangePriorityAndSelector: a range of a higher priority comes first whatever its name; a
// clusterSelector admits the clusters whose labels match and passes the others on to the next
// range; a network whose only range does not select a cluster gives it nothing, says so, and gives
// it an address once the cluster's labels match; a selector no cluster matches is the range's
// Warning.
func TestRangePriorityAndSelector(t *testing.T) {
	f := newFixture(t, "kube-fip-sel-priority")
	r := f.shard.Rancher(t)
	f.operator()
	prod := func(s *v1.FloatingIPRangeSpec) {
		s.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	}
	f.selectionRange("pri-a-shared", "10.172.0.0/24", "harv-pri", nil)
	f.selectionRange("pri-m-fallback", "10.172.1.0/24", "harv-pri", func(s *v1.FloatingIPRangeSpec) { s.Priority = -5 })
	f.selectionRange("pri-z-prod", "10.172.2.0/24", "harv-pri", func(s *v1.FloatingIPRangeSpec) { s.Priority = 100; prod(s) })
	f.selectionRange("pri-q-nobody", "10.172.3.0/24", "harv-pri", func(s *v1.FloatingIPRangeSpec) {
		s.Priority = 200
		s.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "nobody"}}
	})
	f.waitRange("pri-q-nobody", 30*time.Second, "the NoClusterSelected Warning", func(x *v1.FloatingIPRange) bool {
		c, ok := v1.GetCondition(x.Status.Conditions, v1.Warning)
		return ok && c.Reason == v1.ReasonNoClusterSelected
	})

	p, d := harvesterGuest("priprod", "harv-pri", map[string]string{"env": "prod"}), harvesterGuest("pridev", "harv-pri", map[string]string{"env": "dev"})
	rig.Must(t, r.AddGuest(p))
	rig.Must(t, r.AddGuest(d))
	if x := suite.WaitFIP(t, r.FIPs, p.ID, p.Name+"-kubevip", time.Minute); !inRange("pri-z-prod", "10.172.2.0/24")(x) {
		t.Errorf("prod guest: %s, want pri-z-prod (priority 100)", suite.StatusText(x))
	}
	if x := suite.WaitFIP(t, r.FIPs, d.ID, d.Name+"-kubevip", time.Minute); !inRange("pri-a-shared", "10.172.0.0/24")(x) {
		t.Errorf("dev guest: %s, want pri-a-shared (priority 0, before the fallback)", suite.StatusText(x))
	}

	// A network whose only range selects prod: the dev guest gets nothing until it is labelled.
	f.selectionRange("sel-only-prod", "10.173.0.0/24", "harv-selonly", prod)
	lone := harvesterGuest("seldev", "harv-selonly", map[string]string{"env": "dev"})
	rig.Must(t, r.AddGuest(lone))
	rig.Eventually(t, 30*time.Second, "a ClusterNotSelected Event on the provisioning cluster", func() bool {
		return f.shard.HasEvent(t, rancher.FleetNamespace, lone.Name, corev1.EventTypeWarning, v1.ReasonClusterNotSelected, "sel-only-prod")
	})
	if n := len(suite.FIPsIn(t, r.FIPs, lone.ID)); n != 0 {
		t.Fatalf("the guest no range selects has %d FloatingIPs", n)
	}
	rig.Must(t, r.LabelCluster(lone.Name, "env", "prod"))
	if x := suite.WaitFIP(t, r.FIPs, lone.ID, lone.Name+"-kubevip", time.Minute); !inRange("sel-only-prod", "10.173.0.0/24")(x) {
		t.Errorf("relabelled guest: %s, want sel-only-prod", suite.StatusText(x))
	}

	// A FloatingIP a person made for a cluster the range does not select waits, and holds an
	// address once the cluster's labels match: the label change judges it again.
	waiting := harvesterGuest("selwait", "harv-selonly", map[string]string{"env": "dev"})
	rig.Must(t, r.AddGuest(waiting))
	byHand := f.fip("selwait-byhand", "sel-only-prod", "")
	byHand.Namespace, byHand.Annotations[v1.AnnotationClusterName] = waiting.ID, waiting.Name
	byHand.Annotations[v1.AnnotationProvisioningCluster] = rancher.FleetNamespace + "/" + waiting.Name
	if _, err := f.api.FloatingIP().Create(byHand); err != nil {
		t.Fatal(err)
	}
	f.waitFIPIn(waiting.ID, byHand.Name, 30*time.Second, "ClusterNotSelected", reasonIs(v1.ReasonClusterNotSelected))
	rig.Must(t, r.LabelCluster(waiting.Name, "env", "prod"))
	f.waitFIPIn(waiting.ID, byHand.Name, time.Minute, "an address of sel-only-prod", inRange("sel-only-prod", "10.173.0.0/24"))
}

// TestStaticAddressInSecondRange: a FloatingIP naming the first range and asking for an address of
// the second range of its network moves to the second and holds that address.
func TestStaticAddressInSecondRange(t *testing.T) {
	f := newFixture(t, "kube-fip-sel-static")
	r := f.shard.Rancher(t)
	f.operator()
	f.selectionRange("st-a", "10.175.0.0/24", "harv-st", nil)
	f.selectionRange("st-b", "10.175.1.0/24", "harv-st", nil)
	g := harvesterGuest("stg", "harv-st", nil)
	rig.Must(t, r.AddGuest(g))
	suite.WaitFIP(t, r.FIPs, g.ID, g.Name+"-kubevip", time.Minute)
	f.extraNamespace(g.ID)
	x := f.fip("stg-static", "st-a", "10.175.1.77")
	x.Namespace = g.ID
	if _, err := f.api.FloatingIP().Create(x); err != nil {
		t.Fatal(err)
	}
	got := f.waitFIPIn(g.ID, "stg-static", 30*time.Second, "10.175.1.77 in st-b", inRange("st-b", "10.175.1.0/24"))
	if got.Status.IPAddress != "10.175.1.77" {
		t.Errorf("holds %s, want 10.175.1.77", got.Status.IPAddress)
	}
	if !eventSoon(t, f.shard, g.ID, "stg-static", corev1.EventTypeNormal, v1.ReasonRangeChanged, "holds its spec.ipaddress 10.175.1.77") {
		t.Error("no RangeChanged Event naming the static address")
	}
}

// TestPriorityChangeMovesNothing: raising the priority of another range sends new guest clusters
// there (the change took effect) and leaves every held address where it is.
func TestPriorityChangeMovesNothing(t *testing.T) {
	f := newFixture(t, "kube-fip-sel-prichange")
	r := f.shard.Rancher(t)
	f.operator()
	f.selectionRange("pc-a", "10.176.0.0/24", "harv-pc", nil)
	f.selectionRange("pc-b", "10.176.1.0/24", "harv-pc", nil)
	held := map[string]string{}
	var guests []rancher.Guest
	for i := 0; i < 3; i++ {
		g := harvesterGuest(fmt.Sprintf("pc%d", i), "harv-pc", nil)
		rig.Must(t, r.AddGuest(g))
		guests = append(guests, g)
	}
	for _, g := range guests {
		x := suite.WaitFIP(t, r.FIPs, g.ID, g.Name+"-kubevip", time.Minute)
		if !inRange("pc-a", "10.176.0.0/24")(x) {
			t.Fatalf("%s: %s", g.Name, suite.StatusText(x))
		}
		held[g.ID] = x.Status.IPAddress
	}
	f.editRange("pc-b", func(x *v1.FloatingIPRange) { x.Spec.Priority = 100 })
	late := harvesterGuest("pclate", "harv-pc", nil)
	rig.Must(t, r.AddGuest(late))
	if x := suite.WaitFIP(t, r.FIPs, late.ID, late.Name+"-kubevip", time.Minute); !inRange("pc-b", "10.176.1.0/24")(x) {
		t.Fatalf("the guest created after the change: %s, want pc-b", suite.StatusText(x))
	}
	for _, g := range guests {
		x := f.getFIPIn(g.ID, g.Name+"-kubevip")
		if !inRange("pc-a", "10.176.0.0/24")(x) || x.Status.IPAddress != held[g.ID] {
			t.Errorf("%s moved: %s, held %s in pc-a before", g.Name, suite.StatusText(x), held[g.ID])
		}
	}
	if n := len(suite.HeldIn(t, f.api, "pc-b")); n != 1 {
		t.Errorf("pc-b holds %d addresses, want the late guest's only", n)
	}
}

// firstRangeFull checks that rangeName, of size addresses, is full. Two writers racing may leave
// holes in it (a duplicate claim given back after the next FloatingIP already overflowed, and
// FloatingIPs never move back); the test has given a single writer holes+1 new FloatingIPs, which
// must have filled those holes before overflowing.
func firstRangeFull(t *testing.T, api kubefipcontrollers.Interface, rangeName string, size, holes int) {
	t.Helper()
	t.Logf("the race left %d of %s's %d addresses free; one writer then had %d new FloatingIPs to place", holes, rangeName, size, holes+1)
	if held := len(suite.HeldIn(t, api, rangeName)); held != size {
		t.Errorf("%d FloatingIPs hold an address of %s, want all its %d: free addresses there were passed over", held, rangeName, size)
	}
}

// TestSelectionBadInput: a selector operator, a priority or a cap the schema cannot hold is refused
// at the door; a label selector the schema lets through but Kubernetes cannot parse makes the
// range InvalidRange, saying so, while it keeps what it holds.
func TestSelectionBadInput(t *testing.T) {
	f := newFixture(t, "kube-fip-sel-bad")
	f.operator()
	for _, tc := range []struct {
		field string
		edit  func(*v1.FloatingIPRangeSpec)
	}{
		{"spec.clusterSelector.matchExpressions[0].operator", func(s *v1.FloatingIPRangeSpec) {
			s.ClusterSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}}
		}},
		{"spec.maxAddressesPerCluster", func(s *v1.FloatingIPRangeSpec) { s.MaxAddressesPerCluster = -1 }},
	} {
		r := &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "sel-bad-refused"}, Spec: v1.FloatingIPRangeSpec{IPRange: "10.178.9.0/24"}}
		tc.edit(&r.Spec)
		_, err := f.api.FloatingIPRange().Create(r)
		expectInvalid(t, err, tc.field)
	}

	f.selectionRange("sel-bad-key", "10.178.0.0/24", "harv-bad", nil)
	r := f.shard.Rancher(t)
	g := harvesterGuest("selbad", "harv-bad", nil)
	rig.Must(t, r.AddGuest(g))
	held := suite.WaitFIP(t, r.FIPs, g.ID, g.Name+"-kubevip", time.Minute)
	f.editRange("sel-bad-key", func(x *v1.FloatingIPRange) {
		x.Spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"not a key!": "x"}}
	})
	f.waitRange("sel-bad-key", 30*time.Second, "InvalidRange naming the selector", func(x *v1.FloatingIPRange) bool {
		return rangeReason(v1.ReasonInvalidRange)(x) && strings.Contains(message(x.Status.Conditions, v1.Ready), "spec.clusterSelector")
	})
	if x := f.getFIPIn(g.ID, held.Name); !suite.Allocated(x) || x.Status.IPAddress != held.Status.IPAddress {
		t.Errorf("the FloatingIP lost its address when the selector broke: %s", suite.StatusText(x))
	}
}

// TestOverflowRaceManyClusters: two operators that both believe they lead discover 60 guest
// clusters at once on a network whose first range has 14 addresses: every cluster gets one
// address, no address twice, the first range fills and the rest overflow, each FloatingIP holds in
// the range it names, nothing is left held in a range a FloatingIP moved away from, and what the
// race left free in the first range goes to the next clusters.
func TestOverflowRaceManyClusters(t *testing.T) {
	f := newFixture(t, "kube-fip-sel-racemany")
	r := f.shard.Rancher(t)
	a, _ := f.operator("--leader-election=false")
	b, _ := f.operator("--leader-election=false")
	f.selectionRange("rm-a", "10.179.0.0/28", "harv-rm", nil) // 14 addresses
	f.selectionRange("rm-b", "10.179.1.0/24", "harv-rm", nil)

	const n = 60
	var guests []rancher.Guest
	var names []string
	for i := 0; i < n; i++ {
		guests = append(guests, harvesterGuest(fmt.Sprintf("rm%02d", i), "harv-rm", nil))
		names = append(names, guests[i].Name)
	}
	rig.Must(t, rig.Parallel(names, func(name string) error { return r.AddGuest(harvesterGuest(name, "harv-rm", nil)) }))
	byAddr := map[string]string{}
	inA := 0
	for _, g := range guests {
		x := suite.WaitFIP(t, r.FIPs, g.ID, g.Name+"-kubevip", 2*time.Minute)
		if other, dup := byAddr[x.Status.IPAddress]; dup {
			t.Errorf("%s is held by both %s and %s", x.Status.IPAddress, other, g.Name)
		}
		byAddr[x.Status.IPAddress] = g.Name
		if x.Annotations[v1.AnnotationFloatingIPRange] != x.Status.Range {
			t.Errorf("%s names %s but holds in %s", g.Name, x.Annotations[v1.AnnotationFloatingIPRange], x.Status.Range)
		}
		if x.Status.Range == "rm-a" {
			inA++
		}
		if n := len(suite.FIPsIn(t, r.FIPs, g.ID)); n != 1 {
			t.Errorf("%s has %d FloatingIPs, want 1", g.Name, n)
		}
	}
	rig.Eventually(t, time.Minute, "one allocation per cluster", func() bool {
		return len(suite.HeldIn(t, f.api, "rm-a"))+len(suite.HeldIn(t, f.api, "rm-b")) == n
	})
	for name, p := range map[string]interface{ Logs() string }{"first": a, "second": b} {
		if !strings.Contains(p.Logs(), "holds 10.179.") {
			t.Errorf("the %s operator recorded no allocation; the test did not exercise two writers", name)
		}
	}

	// Both stop, one starts: the clusters discovered next fill what the race left free in rm-a.
	rig.Must(t, a.Stop(20*time.Second))
	rig.Must(t, b.Stop(20*time.Second))
	f.operator()
	holes := 14 - inA
	var late []string
	for i := 0; i < holes+1; i++ {
		late = append(late, fmt.Sprintf("rmlate%02d", i))
	}
	rig.Must(t, rig.Parallel(late, func(name string) error { return r.AddGuest(harvesterGuest(name, "harv-rm", nil)) }))
	for _, name := range late {
		g := harvesterGuest(name, "harv-rm", nil)
		suite.WaitFIP(t, r.FIPs, g.ID, g.Name+"-kubevip", time.Minute)
	}
	firstRangeFull(t, f.api, "rm-a", 14, holes)
}
