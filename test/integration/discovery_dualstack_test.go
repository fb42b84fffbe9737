package integration

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	rkev1 "github.com/rancher/rancher/pkg/apis/rke.cattle.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// dualStackConfig is the machineGlobalConfig of a dual-stack RKE2 cluster, the two keys in
// different orders.
func dualStackConfig() map[string]interface{} {
	return map[string]interface{}{
		harvester.ClusterCIDRKey: "10.42.0.0/16,fd00:42::/56",
		harvester.ServiceCIDRKey: "fd00:43::/112, 10.43.0.0/16",
	}
}

// waitFamilyFIP waits until the FloatingIP holds an address, and checks that it comes from range
// rng, is of family, and was created by discovery for cluster g with its address proposed.
func waitFamilyFIP(t testing.TB, r *rancher.World, g rancher.Guest, name, rng string, family harvester.Family) *v1.FloatingIP {
	t.Helper()
	x := suite.WaitFIP(t, r.FIPs, g.ID, name, quick)
	want := map[string]string{v1.AnnotationClusterName: g.Name, v1.AnnotationFloatingIPRange: rng,
		v1.AnnotationUpdateConfigMap: "true", v1.AnnotationProvisioningCluster: rancher.FleetNamespace + "/" + g.Name,
		v1.AnnotationProposedAddress: x.Status.IPAddress}
	for k, v := range want {
		if x.Annotations[k] != v {
			t.Errorf("%s/%s: annotation %s = %q, want %q", g.ID, name, k, x.Annotations[k], v)
		}
	}
	if a, err := netip.ParseAddr(x.Status.IPAddress); err != nil || harvester.FamilyOfAddr(a) != family {
		t.Errorf("%s/%s holds %q, not an %s address", g.ID, name, x.Status.IPAddress, family)
	}
	return x
}

// fipCount checks that namespace holds n FloatingIPs.
func fipCount(t testing.TB, r *rancher.World, namespace string, n int) {
	t.Helper()
	if fips := suite.FIPsIn(t, r.FIPs, namespace); len(fips) != n {
		names := make([]string, len(fips))
		for i, f := range fips {
			names[i] = f.Name
		}
		t.Errorf("namespace %s holds %d FloatingIPs %v, want %d", namespace, len(fips), names, n)
	}
}

// TestDiscoveryDualStack: a cluster whose cluster-cidr and service-cidr list both families gets
// <cluster>-kubevip from the range any cluster would get, and a FloatingIP of the other family
// named for it; a single-stack cluster next to it gets one FloatingIP, as does one whose
// service-cidr alone is single-stack (and the debug line says why). A dual-stack cluster whose
// network has no IPv6 range gets its IPv4 FloatingIP and one NoRangeForFamily Event, and its IPv6
// FloatingIP as soon as such a range is created. A single-stack cluster that becomes dual-stack
// keeps its address and gains the other; a removed cluster loses both, and gets both back when it
// is created again.
func TestDiscoveryDualStack(t *testing.T) {
	f := newFixture(t, "kube-fip-disc-dual")
	r := f.shard.Rancher(t)
	p, _ := f.debugOperator()
	for _, rg := range [][4]string{ // name, CIDR, Harvester cluster, network
		{"disc-dual-v4", "10.167.0.0/24", "harv-dual", "vlan10"},
		{"disc-dual-v6", "fd00:164::/64", "harv-dual", "default/vlan10"},
		{"disc-dual-vlan20", "10.167.1.0/24", "harv-dual", "vlan20"}, // no IPv6 range on vlan20 yet
		// On harv-dual6 the range picked first by name is the IPv6 one.
		{"disc-dual6-a", "fd00:166::/64", "harv-dual6", "vlan10"},
		{"disc-dual6-b", "10.168.0.0/24", "harv-dual6", "vlan10"},
	} {
		f.createRangeFor(rg[0], rg[1], rg[2], rg[3])
	}

	on := func(name, id, harv, display, network string, config map[string]interface{}) rancher.Guest {
		return rancher.Guest{Name: name, ID: id, Harvester: harv, Display: display, Network: rancher.Network(network), Config: config}
	}
	halfConfig := dualStackConfig()
	halfConfig[harvester.ServiceCIDRKey] = "10.43.0.0/16"
	dual := on("dual-both", "c-m-dualboth", "c-m-harvdual", "harv-dual", "vlan10", dualStackConfig())
	single := on("dual-single", "c-m-dualsingle", "c-m-harvdual", "harv-dual", "vlan10",
		map[string]interface{}{harvester.ClusterCIDRKey: "10.42.0.0/16", harvester.ServiceCIDRKey: "10.43.0.0/16"})
	half := on("dual-half", "c-m-dualhalf", "c-m-harvdual", "harv-dual", "vlan10", halfConfig)
	v6first := on("dual-six", "c-m-dualsix", "c-m-harvdual6", "harv-dual6", "vlan10", dualStackConfig())
	v4only := on("dual-v4only", "c-m-dualv4only", "c-m-harvdual", "harv-dual", "vlan20", dualStackConfig())
	for _, g := range []rancher.Guest{dual, single, half, v6first, v4only} {
		rig.Must(t, r.AddGuest(g))
	}

	// Both families on the network: one FloatingIP of each.
	dual4 := waitFamilyFIP(t, r, dual, "dual-both-kubevip", "disc-dual-v4", harvester.IPv4)
	dual6 := waitFamilyFIP(t, r, dual, "dual-both-kubevip-ipv6", "disc-dual-v6", harvester.IPv6)
	waitFamilyFIP(t, r, v6first, "dual-six-kubevip", "disc-dual6-a", harvester.IPv6)
	waitFamilyFIP(t, r, v6first, "dual-six-kubevip-ipv4", "disc-dual6-b", harvester.IPv4)
	waitDecision(t, p, dual.Name, "has its FloatingIPs of both families (dual-stack)")
	waitDecision(t, p, v6first.Name, "has its FloatingIPs of both families (dual-stack)")

	// Single-stack, and single-stack for want of a dual-stack service-cidr: one FloatingIP.
	first := waitFamilyFIP(t, r, single, "dual-single-kubevip", "disc-dual-v4", harvester.IPv4)
	waitFamilyFIP(t, r, half, "dual-half-kubevip", "disc-dual-v4", harvester.IPv4)
	waitDecision(t, p, single.Name, "has its FloatingIP")
	waitDecision(t, p, half.Name, "has its FloatingIP (single-stack: cluster-cidr lists IPv4 and IPv6 but service-cidr lists only IPv4)")

	// No IPv6 range on vlan20: the IPv4 FloatingIP, and an Event once, also when handled again.
	waitFamilyFIP(t, r, v4only, "dual-v4only-kubevip", "disc-dual-vlan20", harvester.IPv4)
	rig.Eventually(t, quick, "a NoRangeForFamily Event", func() bool {
		return f.shard.HasEvent(t, rancher.FleetNamespace, v4only.Name, corev1.EventTypeWarning, v1.ReasonNoRangeForFamily,
			"no IPv6 FloatingIPRange of Harvester cluster harv-dual is annotated harvesterNetworkName=default/vlan20")
	})
	waitDecision(t, p, v4only.Name, "dual-stack: waits for an IPv6 FloatingIPRange of Harvester cluster harv-dual on network default/vlan20")
	handled := passesOver(p, v4only.Name)
	f.createRangeFor("disc-dual-vlan30", "fd00:167::/64", "harv-dual", "vlan30") // a range of the Harvester cluster wakes it
	waitPassesOver(t, p, v4only.Name, handled)
	if n := countEvents(t, rancher.FleetNamespace, v4only.Name, v1.ReasonNoRangeForFamily); n != 1 {
		t.Errorf("NoRangeForFamily recorded %d times, want once", n)
	}
	fipCount(t, r, v4only.ID, 1)

	start := time.Now()
	f.createRangeFor("disc-dual-vlan20-v6", "fd00:165::/64", "harv-dual", "vlan20")
	waitFamilyFIP(t, r, v4only, "dual-v4only-kubevip-ipv6", "disc-dual-vlan20-v6", harvester.IPv6)
	t.Logf("IPv6 FloatingIP %s after its range appeared", time.Since(start).Round(time.Millisecond))
	waitDecision(t, p, v4only.Name, "has its FloatingIPs of both families (dual-stack)")

	// The single-stack cluster becomes dual-stack: it keeps its address and gains an IPv6 one.
	c, err := r.Prov.Get(rancher.FleetNamespace, single.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.RKEConfig.MachineGlobalConfig = rkev1.GenericMap{Data: dualStackConfig()}
	if _, err := r.Prov.Update(c); err != nil {
		t.Fatal(err)
	}
	waitFamilyFIP(t, r, single, "dual-single-kubevip-ipv6", "disc-dual-v6", harvester.IPv6)
	if again := suite.WaitFIP(t, r.FIPs, single.ID, "dual-single-kubevip", quick); again.UID != first.UID || again.Status.IPAddress != first.Status.IPAddress {
		t.Errorf("the first FloatingIP changed: %s %s, was %s %s", again.UID, again.Status.IPAddress, first.UID, first.Status.IPAddress)
	}

	// No duplicate, and exactly one for the single-stack ones.
	for ns, n := range map[string]int{dual.ID: 2, v6first.ID: 2, v4only.ID: 2, single.ID: 2, half.ID: 1} {
		fipCount(t, r, ns, n)
	}

	// Removal takes both. Their addresses are retained, and a cluster of the same name created
	// again gets back each its own: both are in one address space, and neither FloatingIP may be
	// offered the other's.
	rig.Must(t, r.DeleteCluster(dual.Name))
	rig.Eventually(t, quick, "the FloatingIPs of the removed dual-stack cluster gone", func() bool {
		return len(suite.FIPsIn(t, r.FIPs, dual.ID)) == 0
	})
	again := dual
	again.ID = "c-m-dualboth2"
	parts := r.Steps(again)
	rig.Must(t, parts["namespace"]())
	rig.Must(t, parts["cluster"]())
	for _, x := range []*v1.FloatingIP{dual4, dual6} {
		if back := suite.WaitFIP(t, r.FIPs, again.ID, x.Name, quick); back.Status.IPAddress != x.Status.IPAddress {
			t.Errorf("re-created %s holds %s, want its retained %s", x.Name, back.Status.IPAddress, x.Status.IPAddress)
		}
	}
	if lines := errorLinesAbout(p.Logs(), "dual-"); len(lines) > 0 {
		t.Errorf("error log lines:\n%s", strings.Join(lines, "\n"))
	}
}
