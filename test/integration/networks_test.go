package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/controllers/discovery"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// readmeAction is what the reason table of docs/troubleshooting.md tells a person to do about
// reason, shown where; the test fails when the table has no such row or the row no action.
func readmeAction(t *testing.T, reason, where string) string {
	t.Helper()
	section, err := rig.DocSection("docs/troubleshooting.md", "## Reasons")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) == 3 && strings.Contains(cells[0], "`"+reason+"`") {
			if cells[1] != where || len(strings.TrimSuffix(cells[2], " |")) < 20 {
				t.Errorf("the reason table's row of %s: %q; want it shown on %s with an action", reason, line, where)
			}
			return cells[2]
		}
	}
	t.Errorf("the reason table has no row of %s", reason)
	return ""
}

// touchConfig changes the guest's HarvesterConfig in a way that changes nothing of its network,
// which brings the guest's provisioning cluster back to discovery.
func touchConfig(t *testing.T, r *rancher.World, g rancher.Guest) {
	t.Helper()
	res := r.Dyn.Resource(discovery.HarvesterConfigResource()).Namespace(rancher.FleetNamespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := res.Get(context.Background(), g.ConfigName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		u.Object["cpuCount"] = time.Now().Format(time.RFC3339Nano)
		_, err = res.Update(context.Background(), u, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRangeOfAnotherNetworkGivesNoAddress: a guest cluster whose Harvester cluster has only a range
// of another network gets no FloatingIP and that range hands out nothing; a Warning Event on its
// provisioning cluster, recorded once, names the range to create (Harvester cluster, network,
// both annotations), and the reason table of docs/troubleshooting.md says what to do. Once such a
// range is created, the FloatingIP follows within seconds, from it.
func TestRangeOfAnotherNetworkGivesNoAddress(t *testing.T) {
	f := newFixture(t, "kube-fip-net-other")
	r := f.shard.Rancher(t)
	p, _ := f.debugOperator()
	f.createRangeFor("net-other-vlan20", "10.172.0.0/24", "harv-netother", "vlan20")
	g := rancher.Guest{Name: "net-other", ID: "c-m-netother", Harvester: "c-m-harvnetother", Display: "harv-netother", Network: rancher.Network("vlan10")}
	rig.Must(t, r.AddGuest(g))

	rig.Eventually(t, quick, "a NoRangeForNetwork Event naming the range to create", func() bool {
		return f.shard.HasEvent(t, rancher.FleetNamespace, g.Name, corev1.EventTypeWarning, v1.ReasonNoRangeForNetwork,
			"its ranges are of other networks (net-other-vlan20 on vlan20)") &&
			f.shard.HasEvent(t, rancher.FleetNamespace, g.Name, corev1.EventTypeWarning, v1.ReasonNoRangeForNetwork,
				"Create a FloatingIPRange annotated harvesterClusterName=harv-netother and harvesterNetworkName=default/vlan10")
	})
	waitDecision(t, p, g.Name, "waits for a FloatingIPRange of Harvester cluster harv-netother on network default/vlan10 ("+v1.ReasonNoRangeForNetwork+")")
	readmeAction(t, v1.ReasonNoRangeForNetwork, "provisioning cluster Event")

	// Handled again, it still has nothing and says so no second time.
	handled := passesOver(p, g.Name)
	touchConfig(t, r, g)
	waitPassesOver(t, p, g.Name, handled)
	if n := countEvents(t, rancher.FleetNamespace, g.Name, v1.ReasonNoRangeForNetwork); n != 1 {
		t.Errorf("NoRangeForNetwork recorded %d times, want once", n)
	}
	if n := len(suite.FIPsIn(t, r.FIPs, g.ID)); n != 0 {
		t.Fatalf("%d FloatingIPs on a network no range names; want none", n)
	}
	if held := suite.HeldIn(t, f.api, "net-other-vlan20"); len(held) != 0 {
		t.Errorf("the range of another network holds %v; want nothing", held)
	}

	start := time.Now()
	f.createRangeFor("net-other-vlan10", "10.172.1.0/24", "harv-netother", "default/vlan10")
	x := suite.WaitFIP(t, r.FIPs, g.ID, g.Name+"-kubevip", quick)
	t.Logf("%s holds %s %s after the range of its network appeared", x.Name, x.Status.IPAddress, time.Since(start).Round(time.Millisecond))
	if x.Status.Range != "net-other-vlan10" || !strings.HasPrefix(x.Status.IPAddress, "10.172.1.") {
		t.Errorf("%s holds %s of %s; want an address of net-other-vlan10", x.Name, x.Status.IPAddress, x.Status.Range)
	}
}

// TestRangeThatNamesNoNetworkIsTheFallback: when no range of the guest's Harvester cluster names
// its network, the guest's address comes from one that names no network (the original operator's
// kind of range), never from one of another network that comes first by name; a Warning Event
// says which range was used.
func TestRangeThatNamesNoNetworkIsTheFallback(t *testing.T) {
	f := newFixture(t, "kube-fip-net-fallback")
	r := f.shard.Rancher(t)
	f.operator()
	f.createRangeFor("net-fallback-a-vlan20", "10.175.0.0/24", "harv-netfallback", "vlan20")
	f.knownHarvester("harv-netfallback")
	if _, err := f.api.FloatingIPRange().Create(&v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: "net-fallback-b-any", Annotations: map[string]string{v1.AnnotationHarvesterClusterName: "harv-netfallback"}},
		Spec:       v1.FloatingIPRangeSpec{IPRange: "10.175.1.0/24"},
	}); err != nil {
		t.Fatal(err)
	}
	f.ranges = append(f.ranges, "net-fallback-b-any")
	g := rancher.Guest{Name: "net-fallback", ID: "c-m-netfallback", Harvester: "c-m-harvnetfallback", Display: "harv-netfallback", Network: rancher.Network("vlan10")}
	rig.Must(t, r.AddGuest(g))

	x := suite.WaitFIP(t, r.FIPs, g.ID, g.Name+"-kubevip", quick)
	if x.Status.Range != "net-fallback-b-any" || !strings.HasPrefix(x.Status.IPAddress, "10.175.1.") {
		t.Errorf("%s holds %s of %s; want an address of net-fallback-b-any, which names no network", x.Name, x.Status.IPAddress, x.Status.Range)
	}
	rig.Eventually(t, quick, "a RangeNetworkMismatch Event naming the range used", func() bool {
		return f.shard.HasEvent(t, rancher.FleetNamespace, g.Name, corev1.EventTypeWarning, v1.ReasonRangeNetworkMismatch,
			"using net-fallback-b-any, the first by name of those that name no network")
	})
}

// TestAddressOnAnotherNetworkIsShownNotMoved: a guest's FloatingIP that holds an address of a range
// of another network, as an earlier release made it, is shown so — Warning=True with reason
// AddressOnAnotherNetwork naming both networks, a Warning Event, a row with an action in the
// reason table — and keeps its address, range and spec when a range of its network appears. Doing
// what the reason table says (deleting it) gives the guest an address of its network, and the
// Warning goes.
func TestAddressOnAnotherNetworkIsShownNotMoved(t *testing.T) {
	f := newFixture(t, "kube-fip-net-held")
	r := f.shard.Rancher(t)
	p, _ := f.debugOperator()
	f.createRangeFor("net-held-vlan20", "10.174.0.0/24", "harv-netheld", "vlan20")
	g := rancher.Guest{Name: "net-held", ID: "c-m-netheld", Harvester: "c-m-harvnetheld", Display: "harv-netheld", Network: rancher.Network("vlan10")}
	// The cluster first: a FloatingIP that names a provisioning cluster that does not exist is one of
	// a removed cluster, which discovery deletes.
	rig.Must(t, r.AddGuest(g))
	// The FloatingIP as the earlier release's discovery made it, from the first range by name.
	name := g.Name + "-kubevip"
	if _, err := r.FIPs.FloatingIP().Create(&v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: g.ID, Annotations: map[string]string{
		v1.AnnotationClusterName: g.Name, v1.AnnotationFloatingIPRange: "net-held-vlan20", v1.AnnotationUpdateConfigMap: "true",
		v1.AnnotationProvisioningCluster: rancher.FleetNamespace + "/" + g.Name,
	}}}); err != nil {
		t.Fatal(err)
	}

	x := f.waitFIPIn(g.ID, name, 30*time.Second, "an address of net-held-vlan20 and the AddressOnAnotherNetwork Warning", func(x *v1.FloatingIP) bool {
		c, ok := v1.GetCondition(x.Status.Conditions, v1.Warning)
		return suite.Allocated(x) && x.Status.Range == "net-held-vlan20" && ok && c.Status == corev1.ConditionTrue &&
			c.Reason == v1.ReasonAddressOnAnotherNetwork && strings.Contains(c.Message, "holds "+x.Status.IPAddress+" of FloatingIPRange net-held-vlan20") &&
			strings.Contains(c.Message, "annotated harvesterNetworkName=vlan20") && strings.Contains(c.Message, "on network default/vlan10")
	})
	rig.Eventually(t, quick, "a Warning AddressOnAnotherNetwork Event on the FloatingIP", func() bool {
		return f.shard.HasEvent(t, g.ID, name, corev1.EventTypeWarning, v1.ReasonAddressOnAnotherNetwork, "holds "+x.Status.IPAddress+" of FloatingIPRange net-held-vlan20")
	})
	readmeAction(t, v1.ReasonAddressOnAnotherNetwork, "FloatingIP Warning")

	// A range of its network appears, and discovery passes over the cluster again: nothing moves.
	f.createRangeFor("net-held-vlan10", "10.174.1.0/24", "harv-netheld", "default/vlan10")
	handled := passesOver(p, g.Name)
	touchConfig(t, r, g)
	waitPassesOver(t, p, g.Name, handled)
	waitDecision(t, p, g.Name, "has its FloatingIP")
	y := f.getFIPIn(g.ID, name)
	if y.UID != x.UID || y.Status.IPAddress != x.Status.IPAddress || y.Status.Range != x.Status.Range || y.Spec.IPAddress != x.Spec.IPAddress ||
		y.Annotations[v1.AnnotationFloatingIPRange] != "net-held-vlan20" || !v1.Warning.IsTrue(y) {
		t.Errorf("the FloatingIP changed: %s in %s (annotation %s), was %s in %s; Warning %v",
			y.Status.IPAddress, y.Status.Range, y.Annotations[v1.AnnotationFloatingIPRange], x.Status.IPAddress, x.Status.Range, v1.Warning.IsTrue(y))
	}
	fipCount(t, r, g.ID, 1)
	if held := suite.HeldIn(t, f.api, "net-held-vlan10"); len(held) != 0 {
		t.Errorf("the range of its network holds %v; want nothing yet", held)
	}

	// What the reason table says to do: delete it; discovery makes it again, from the range of its network.
	if err := r.FIPs.FloatingIP().Delete(g.ID, name, nil); err != nil {
		t.Fatal(err)
	}
	z := f.waitFIPIn(g.ID, name, 30*time.Second, "made again, with an address of net-held-vlan10", func(z *v1.FloatingIP) bool {
		return z.UID != x.UID && suite.Allocated(z) && z.Status.Range == "net-held-vlan10"
	})
	rig.Eventually(t, quick, "no Warning on the new FloatingIP", func() bool {
		return !v1.Warning.IsTrue(f.getFIPIn(g.ID, name))
	})
	t.Logf("made again with %s of %s", z.Status.IPAddress, z.Status.Range)
}

// TestRangeOfUnknownHarvesterClusterIsNotReady: a range whose harvesterClusterName is the display
// name of no management cluster is Ready=False, reason UnknownHarvesterCluster (Stalled, a Warning
// Event, a row with an action in the reason table), and still gives a FloatingIP that names it an
// address; it turns Ready within seconds when a management cluster of that name appears, and not
// Ready again when that cluster is renamed. A range without the annotation is Ready, as before.
func TestRangeOfUnknownHarvesterClusterIsNotReady(t *testing.T) {
	f := newFixture(t, "kube-fip-range-unknown")
	r := f.shard.Rancher(t)
	f.operator()
	const display = "harv-unknown-typo"
	for name, annotations := range map[string]map[string]string{
		"unknown-harv": {v1.AnnotationHarvesterClusterName: display, v1.AnnotationHarvesterNetworkName: "vlan10"},
		"unknown-none": nil,
	} {
		cidr := map[string]string{"unknown-harv": "10.173.0.0/29", "unknown-none": "10.173.1.0/29"}[name]
		if _, err := f.api.FloatingIPRange().Create(&v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
			Spec: v1.FloatingIPRangeSpec{IPRange: cidr, AllowedNamespaces: []string{f.ns}}}); err != nil {
			t.Fatal(err)
		}
		f.ranges = append(f.ranges, name)
	}
	unknown := func(x *v1.FloatingIPRange) bool {
		return rangeReason(v1.ReasonUnknownHarvesterCluster)(x) && !v1.Ready.IsTrue(x) && v1.Stalled.IsTrue(x) &&
			strings.Contains(message(x.Status.Conditions, v1.Ready), "harvesterClusterName="+display)
	}
	f.waitRange("unknown-harv", 30*time.Second, "Ready=False, UnknownHarvesterCluster", unknown)
	f.waitRange("unknown-none", 30*time.Second, "Ready", rangeReady)
	if !eventSoon(t, f.shard, "", "unknown-harv", corev1.EventTypeWarning, v1.ReasonUnknownHarvesterCluster, display) {
		t.Errorf("no Warning %s Event on the range", v1.ReasonUnknownHarvesterCluster)
	}
	readmeAction(t, v1.ReasonUnknownHarvesterCluster, "FloatingIPRange")

	// Not Ready, but a FloatingIP that names it gets its address.
	f.createFIP("unknown-byhand", "unknown-harv", "")
	f.waitFIP("unknown-byhand", 30*time.Second, "an address of unknown-harv", suite.Allocated)

	const id = "c-m-harvunknown"
	start := time.Now()
	rig.Must(t, r.AddManagementCluster(id, display))
	f.waitRange("unknown-harv", quick, "Ready once Rancher knows the Harvester cluster", rangeReady)
	t.Logf("Ready %s after the management cluster appeared", time.Since(start).Round(time.Millisecond))

	// Renamed in Rancher: the range names no cluster Rancher knows again.
	rig.Must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m, err := r.Mgmt.Get(id, metav1.GetOptions{})
		if err != nil {
			return err
		}
		m.Spec.DisplayName = display + "-renamed"
		_, err = r.Mgmt.Update(m)
		return err
	}))
	f.waitRange("unknown-harv", quick, "Ready=False again after the rename", unknown)
}
