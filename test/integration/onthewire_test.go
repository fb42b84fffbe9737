package integration

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
	"github.com/kubefip/kube-fip-operator/test/rig/harvester"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// harvesterCluster is a Harvester cluster as Rancher reaches it: a real API server holding
// Harvester's CRDs behind the test cluster proxy, imported into the fixture's Rancher.
type harvesterCluster struct {
	*harvester.Cluster
	id, display string
	proxy       *guests.ClusterProxy
}

// importHarvester starts a Harvester cluster named display, with the CRDs of its networks, pools
// and VMs, and imports it into Rancher as cluster id, served by proxy.
func (f *fixture) importHarvester(proxy *guests.ClusterProxy, id, display string) *harvesterCluster {
	f.t.Helper()
	g := f.shard.StartGuest(f.t, display)
	rig.Must(f.t, harvester.Install(context.Background(), g.Config))
	c, err := harvester.NewCluster(g.Config)
	rig.Must(f.t, err)
	if f.world == nil {
		f.world = f.shard.Rancher(f.t)
	}
	rig.Must(f.t, harvester.Register(f.world, proxy, g.Name, g.Config, id, display, "token-"+display))
	return &harvesterCluster{Cluster: c, id: id, display: display, proxy: proxy}
}

// wireRange is a range of Harvester cluster display on network, that the fixture's namespace may
// take addresses of.
func (f *fixture) wireRange(name, cidr, display, network string) *v1.FloatingIPRange {
	return &v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			v1.AnnotationHarvesterClusterName: display, v1.AnnotationHarvesterNetworkName: network,
		}},
		Spec: v1.FloatingIPRangeSpec{IPRange: cidr, AllowedNamespaces: []string{f.ns}},
	}
}

func (f *fixture) createWireRange(name, cidr, display, network string) {
	f.t.Helper()
	if _, err := f.api.FloatingIPRange().Create(f.wireRange(name, cidr, display, network)); err != nil {
		f.t.Fatalf("creating range %s: %v", name, err)
	}
	f.ranges = append(f.ranges, name)
}

// rangeWarns is a range whose Warning condition's message holds every part (the condition names
// the first warning's reason, and says every warning).
func rangeWarns(parts ...string) func(*v1.FloatingIPRange) bool {
	return func(r *v1.FloatingIPRange) bool {
		c, ok := v1.GetCondition(r.Status.Conditions, v1.Warning)
		if !ok {
			return false
		}
		for _, p := range parts {
			if !strings.Contains(c.Message, p) {
				return false
			}
		}
		return true
	}
}

// TestRangeKeepsClearOfWhatHarvesterHandsOut: a range created before Harvester's pools and VMs on
// its segment says so once they come (HarvesterClaimsAddresses, naming each), and no address they
// claim is handed out, dynamically or on request; the FloatingIP whose address a VM of another
// guest reports shows AddressInUseOnNetwork naming the VM and keeps its address, while the same
// address reported by the guest's own node is no conflict. Two network names of one segment, and
// the bare and qualified names of one network, overlap like one name. With the Harvester cluster
// disconnected the range says conflicts are not known, the last view still holds, and allocation
// goes on.
func TestRangeKeepsClearOfWhatHarvesterHandsOut(t *testing.T) {
	f := newFixture(t, "c-m-wire0001")
	hv := f.importHarvester(f.shard.StartClusterProxy(t), "c-m-hvwire01", "hvwire")
	ctx := context.Background()
	rig.Must(t, firstErr(
		ignore(hv.NAD(ctx, "default", "vlan10", "mgmt", 10, "10.181.0.0/24", "10.181.0.1")),
		ignore(hv.NAD(ctx, "other", "vlan10b", "mgmt", 10, "", "")),
	))
	rig.Must(t, f.world.AddCluster(rancher.Guest{Name: "wire-guest", ID: f.ns}))
	_, port := f.operator("--harvester-read-interval=2s")
	f.createWireRange("wire-a", "10.181.0.0/27", hv.display, "vlan10")
	f.createFIP("held", "wire-a", "10.181.0.20")
	f.waitFIP("held", 15*time.Second, "its address", suite.Allocated)

	rig.Must(t, firstErr(
		ignore(hv.CreateLBPool(ctx, harvester.LBPool{Name: "lb-late", Network: "default/vlan10",
			Ranges: []harvester.Range{{Subnet: "10.181.0.0/24", RangeStart: "10.181.0.2", RangeEnd: "10.181.0.4", Gateway: "10.181.0.1"}}})),
		ignore(hv.CreateLBPool(ctx, harvester.LBPool{Name: "lb-global", Global: true,
			Ranges: []harvester.Range{{Subnet: "10.181.0.0/24", RangeStart: "10.181.0.9", RangeEnd: "10.181.0.9"}}})),
		ignore(hv.CreateDHCPPool(ctx, harvester.DHCPPool{Namespace: "default", Name: "dhcp10", Network: "default/vlan10",
			CIDR: "10.181.0.0/24", ServerIP: "10.181.0.7", Router: "10.181.0.1", Start: "10.181.0.5", End: "10.181.0.6"})),
		hv.CreateVM(ctx, harvester.VM{Namespace: "default", Name: "stray", NICs: []harvester.NIC{{Name: "nic-0", Network: "default/vlan10", Addresses: []string{"10.181.0.8"}}}}),
		hv.CreateVM(ctx, harvester.VM{Namespace: "default", Name: "intruder-pool1-5c6d7e8f9-abcde", GuestCluster: "someone-else",
			NICs: []harvester.NIC{{Name: "nic-0", Network: "default/vlan10", Addresses: []string{"10.181.0.20"}}}}),
		hv.CreateVM(ctx, harvester.VM{Namespace: "default", Name: "wire-guest-pool1-5c6d7e8f9-fghij", GuestCluster: "wire-guest",
			NICs: []harvester.NIC{{Name: "nic-0", Network: "default/vlan10", Addresses: []string{"10.181.0.21", "10.181.0.20"}}}}),
	))

	f.waitRange("wire-a", 30*time.Second, "HarvesterClaimsAddresses naming each claim", rangeWarns("hands out or uses",
		"IPPool lb-late", "IPPool lb-global", "IPPool default/dhcp10", "VirtualMachineInstance default/stray", "lb-late (10.181.0.2-10.181.0.4)", "11 addresses"))
	x := f.waitFIP("held", 30*time.Second, "AddressInUseOnNetwork naming the intruder", func(x *v1.FloatingIP) bool {
		c, ok := v1.GetCondition(x.Status.Conditions, v1.Warning)
		return ok && c.Reason == v1.ReasonAddressInUse && strings.Contains(c.Message, "intruder-pool1-5c6d7e8f9-abcde") &&
			!strings.Contains(c.Message, "wire-guest-pool1")
	})
	if x.Status.IPAddress != "10.181.0.20" {
		t.Errorf("the FloatingIP whose address a VM also reports moved to %s; want it kept", x.Status.IPAddress)
	}
	if !f.shard.HasEvent(t, f.ns, "held", "Warning", v1.ReasonAddressInUse, "intruder") {
		t.Error("no AddressInUseOnNetwork Event on the FloatingIP")
	}
	if got := metricSum(t, port, "kubefipoperator_fipranges_in_use_elsewhere", `fiprangename="wire-a"`); got != 1 {
		t.Errorf("kubefipoperator_fipranges_in_use_elsewhere of wire-a = %v, want 1", got)
	}

	// Dynamic addresses pass every claimed one: .1 to .9 are the pools', the router's, the
	// server's and the stray VM's, .20 and .21 are reported by VMs.
	for i := 1; i <= 3; i++ {
		f.createFIP(fmt.Sprintf("dyn%d", i), "wire-a", "")
	}
	for i := 1; i <= 3; i++ {
		got := f.waitFIP(fmt.Sprintf("dyn%d", i), 15*time.Second, "an address", suite.Allocated).Status.IPAddress
		if a := netip.MustParseAddr(got); a.Less(netip.MustParseAddr("10.181.0.10")) {
			t.Errorf("dyn%d got %s, which Harvester hands out or a VM uses", i, got)
		}
	}
	f.createFIP("static-claimed", "wire-a", "10.181.0.3")
	f.waitFIP("static-claimed", 15*time.Second, v1.ReasonClaimedOnNetwork, reasonIs(v1.ReasonClaimedOnNetwork))

	// Two names of one segment, and the bare and the qualified name of one network.
	f.createWireRange("wire-b", "10.181.0.16/28", hv.display, "other/vlan10b")
	f.createWireRange("wire-c", "10.181.0.24/29", hv.display, "default/vlan10")
	for _, name := range []string{"wire-b", "wire-c"} {
		r := f.waitRange(name, 30*time.Second, "Overlap with wire-a on the segment", rangeReason(v1.ReasonOverlap))
		if m := message(r.Status.Conditions, v1.Ready); !strings.Contains(m, "wire-a") || !strings.Contains(m, "VLAN 10") {
			t.Errorf("range %s: Ready says %q; want it to name wire-a and the segment", name, m)
		}
	}

	// Disconnected: conflicts not known, the last view still withheld, allocation goes on.
	hv.proxy.DisconnectDelay = 100 * time.Millisecond
	hv.proxy.SetMode(hv.id, guests.ProxyDisconnected)
	f.waitRange("wire-a", 30*time.Second, "HarvesterNotRead", rangeWarns("cannot be read now"))
	f.createFIP("dyn4", "wire-a", "")
	if got := f.waitFIP("dyn4", 15*time.Second, "an address", suite.Allocated).Status.IPAddress; netip.MustParseAddr(got).Less(netip.MustParseAddr("10.181.0.10")) {
		t.Errorf("dyn4 got %s with the Harvester cluster disconnected; the last view's claims must still be withheld", got)
	}
}

func ignore[T any](_ T, err error) error { return err }

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// warnings collects the warnings the API server hands back, as kubectl prints them.
type warnings struct{ got []string }

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) { w.got = append(w.got, text) }

// TestWebhookJudgesRangesOnTheWire: at apply time, a range is refused that overlaps a load
// balancer pool of its network, a DHCP pool of its network, or a range of another network name of
// the same segment (another NetworkAttachmentDefinition of the same cluster network and VLAN, and
// the bare and qualified forms of one name); one that overlaps Harvester's global load balancer
// pool is let through with a warning, as is one of a Harvester cluster Rancher cannot reach.
func TestWebhookJudgesRangesOnTheWire(t *testing.T) {
	f := newFixture(t, "c-m-wire0002")
	hv := f.importHarvester(f.shard.StartClusterProxy(t), "c-m-hvwire02", "hvwire2")
	ctx := context.Background()
	rig.Must(t, firstErr(
		ignore(hv.NAD(ctx, "default", "vlan10", "mgmt", 10, "10.182.0.0/16", "10.182.0.1")),
		ignore(hv.NAD(ctx, "other", "vlan10b", "mgmt", 10, "", "")),
		ignore(hv.NAD(ctx, "default", "vlan20", "mgmt", 20, "", "")),
		ignore(hv.CreateLBPool(ctx, harvester.LBPool{Name: "lb-vlan10", Network: "default/vlan10",
			Ranges: []harvester.Range{{Subnet: "10.182.0.0/24", RangeStart: "10.182.0.100", RangeEnd: "10.182.0.110"}}})),
		ignore(hv.CreateLBPool(ctx, harvester.LBPool{Name: "lb-global", Global: true,
			Ranges: []harvester.Range{{Subnet: "10.182.3.0/24", RangeStart: "10.182.3.5", RangeEnd: "10.182.3.6"}}})),
		ignore(hv.CreateDHCPPool(ctx, harvester.DHCPPool{Namespace: "default", Name: "dhcp20", Network: "default/vlan20",
			CIDR: "10.182.1.0/24", ServerIP: "10.182.1.2", Router: "10.182.1.1", Start: "10.182.1.50", End: "10.182.1.60"})),
	))
	w := f.newWebhookEnv(nil)
	w.start(true)

	refused := map[string]struct {
		r     *v1.FloatingIPRange
		parts []string
	}{
		"a network's load balancer pool": {f.wireRange("w2-lb", "10.182.0.96/27", hv.display, "default/vlan10"), []string{"load balancer IPPool lb-vlan10", "10.182.0.100-10.182.0.110"}},
		"a network's DHCP pool":          {f.wireRange("w2-dhcp", "10.182.1.0/26", hv.display, "default/vlan20"), []string{"DHCP IPPool default/dhcp20"}},
	}
	for what, c := range refused {
		err := f.shard.DryRunCreateRange(c.r)
		if !suite.RefusedBecause(err, c.parts...) {
			t.Errorf("a range overlapping %s: %v; want it refused naming %v", what, err, c.parts)
		}
	}

	f.createWireRange("w2-bare", "10.182.2.0/28", hv.display, "vlan10")
	for _, network := range []string{"other/vlan10b", "default/vlan10"} {
		err := f.shard.DryRunCreateRange(f.wireRange("w2-same", "10.182.2.8/29", hv.display, network))
		if !suite.RefusedBecause(err, "w2-bare", "same layer-2 segment", "VLAN 10") {
			t.Errorf("a range on %s overlapping w2-bare on vlan10: %v; want it refused as one segment", network, err)
		}
	}
	if err := f.shard.DryRunCreateRange(f.wireRange("w2-vlan20", "10.182.2.8/29", hv.display, "default/vlan20")); err != nil {
		t.Errorf("the same addresses on another VLAN: %v; want them allowed", err)
	}

	for what, c := range map[string]struct {
		r    *v1.FloatingIPRange
		warn string
	}{
		"the global pool":               {f.wireRange("w2-global", "10.182.3.0/28", hv.display, "default/vlan10"), "global load balancer IPPool lb-global"},
		"a Harvester cluster unreached": {f.wireRange("w2-unknown", "10.182.4.0/28", "not-imported", "default/vlan10"), "could not be read"},
	} {
		var got warnings
		cfg := rest.CopyConfig(f.shard.Env.Config)
		cfg.WarningHandler = &got
		if err := suite.DryRunCreateRangeIn(cfg, c.r); err != nil {
			t.Errorf("a range overlapping %s: %v; want it allowed", what, err)
		}
		if !slices.ContainsFunc(got.got, func(s string) bool { return strings.Contains(s, c.warn) }) {
			t.Errorf("a range of %s: warnings %q; want one saying %q", what, got.got, c.warn)
		}
	}
}

// TestGuestKubevipAnnouncesOnTheRangesNIC: kube-vip is installed in a guest to announce on the NIC
// its control-plane VMs have on the range's network, as the guest agent names it in Harvester
// (eth1 on the second network, not the first NIC); a node of the guest that has no NIC there keeps
// the guest from being Ready, KubevipInstalled naming the node.
func TestGuestKubevipAnnouncesOnTheRangesNIC(t *testing.T) {
	f := newFixture(t, "c-m-nic00001")
	proxy := f.shard.StartClusterProxy(t)
	hv := f.importHarvester(proxy, "c-m-hvnic001", "hvnic")
	gc := rancherCluster(t, proxy, "nicguest", "c-m-nicguest", nil, f.shard.StartGuest(t, "nicguest"))
	repo := chartrepo.ChartRepoForTest(t, controlplane.PinnedStandIns()...)
	ctx := context.Background()
	rig.Must(t, firstErr(
		ignore(hv.NAD(ctx, "default", "vlan10", "mgmt", 10, "", "")),
		ignore(hv.NAD(ctx, "default", "vlan20", "mgmt", 20, "10.183.0.0/24", "10.183.0.1")),
		hv.CreateVM(ctx, harvester.VM{Namespace: "default", Name: "nicguest-pool1-5c6d7e8f9-aaaaa", GuestCluster: "nicguest", NICs: []harvester.NIC{
			{Name: "nic-0", Network: "default/vlan10", GuestName: "enp1s0", Addresses: []string{"10.184.0.11"}},
			{Name: "nic-1", Network: "default/vlan20", GuestName: "eth1", Addresses: []string{"10.183.0.11"}},
		}}),
	))
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2", "kubevipChartRepoUrl": repo.URL, "kubevipGuestInstall": "enabled"})
	f.operator(controlplane.StandInDigestsArg(), "--harvester-read-interval=2s")
	f.createWireRange("nic-r", "10.183.0.32/28", hv.display, "default/vlan20")
	f.createFIPIn(gc.id, "nicguest-kubevip", "nic-r", "")

	rig.Eventually(t, 60*time.Second, "kube-vip's DaemonSet announcing on eth1", func() bool {
		ds, err := gc.direct.AppsV1().DaemonSets("kube-system").Get(ctx, chartvalues.KubevipNameOverride, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "vip_interface" {
				return e.Value == "eth1"
			}
		}
		return false
	})

	rig.Must(t, hv.CreateVM(ctx, harvester.VM{Namespace: "default", Name: "nicguest-pool1-5c6d7e8f9-bbbbb", GuestCluster: "nicguest", NICs: []harvester.NIC{
		{Name: "nic-0", Network: "default/vlan10", GuestName: "enp1s0", Addresses: []string{"10.184.0.12"}},
	}}))
	x := f.waitFIPIn(gc.id, "nicguest-kubevip", 60*time.Second, v1.ReasonNoInterfaceOnNetwork+" naming the node", func(x *v1.FloatingIP) bool {
		c, ok := v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled)
		return ok && c.Reason == v1.ReasonNoInterfaceOnNetwork && strings.Contains(c.Message, "default/nicguest-pool1-5c6d7e8f9-bbbbb") &&
			!strings.Contains(c.Message, "aaaaa")
	})
	if v1.Ready.IsTrue(x) {
		t.Errorf("the FloatingIP is Ready while a control-plane node has no NIC on the range's network: %s", suite.StatusText(x))
	}
}
