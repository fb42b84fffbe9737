package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/harvester"
	"github.com/kubefip/kube-fip-operator/test/rig/node"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
)

// The Harvester cluster the guest's ranges name, as Rancher knows it (startRancher), and the
// guest node's second link.
const (
	harvesterID, harvesterName = "c-m-e2eharv", "harvester-e2e"
	secondLink                 = "enp2s0"
)

// harvesterCluster starts, once, the Harvester cluster the guest's ranges name: an API server
// with the CRDs of Harvester's networks, pools and VMs, imported into Rancher and reached through
// the cluster proxy, where the operator reads it. It holds the guest's first network, vlan12, the
// guest node's link enp1s0.
func (s *suite) harvesterCluster(t *testing.T) *harvester.Cluster {
	t.Helper()
	if s.hv != nil {
		return s.hv
	}
	crds, err := harvester.CRDs()
	rig.Must(t, err)
	if s.hvPlane, err = controlplane.StartWithCRDs(crds); err != nil {
		t.Fatalf("starting the Harvester cluster's API server: %v", err)
	}
	rig.Must(t, harvester.Register(s.world, s.proxy, harvesterName, s.hvPlane.Config, harvesterID, harvesterName, "token-"+harvesterName))
	hv, err := harvester.NewCluster(s.hvPlane.Config)
	rig.Must(t, err)
	first := netip.PrefixFrom(s.guest.NodeAddr, 24).Masked()
	if _, err := hv.NAD(context.Background(), "default", "vlan12", "mgmt", guestIndex, first.String(), s.guest.HostAddr.String()); err != nil {
		t.Fatal(err)
	}
	s.hv = hv
	return hv
}

// setGuestNetworks gives the guest's HarvesterConfig the VM networks of its machines' NICs, in
// order, as the node driver writes them (networkInfo), or the one network of an older config
// (networkName) when only one is given.
func (s *suite) setGuestNetworks(t *testing.T, networks ...string) {
	t.Helper()
	fields := rancher.Network(strings.TrimPrefix(networks[0], "default/"))
	if len(networks) > 1 {
		var nics []string
		for _, n := range networks {
			nics = append(nics, fmt.Sprintf(`{"networkName":%q}`, n))
		}
		fields = map[string]interface{}{"networkInfo": `{"interfaces":[` + strings.Join(nics, ",") + `]}`}
	}
	configs := s.world.Dyn.Resource(rancher.HarvesterConfigResource()).Namespace(rancher.FleetNamespace)
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := configs.Get(ctx, "nc-"+guestName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		delete(u.Object, "networkName")
		delete(u.Object, "networkInfo")
		for k, v := range fields {
			u.Object[k] = v
		}
		_, err = configs.Update(ctx, u, metav1.UpdateOptions{})
		return err
	})
	rig.Must(t, err)
}

// renewGuestFIP deletes the guest's FloatingIP, as a person who moved the guest to another
// network does to give up the address of the old one, and waits for discovery's new one in
// rangeName, kube-vip installed and the address written to the guest; it returns its address.
func (s *suite) renewGuestFIP(t *testing.T, rangeName string) netip.Addr {
	t.Helper()
	list, err := s.fips.FloatingIP().List(guestID, metav1.ListOptions{})
	rig.Must(t, err)
	for _, f := range list.Items {
		if err := s.fips.FloatingIP().Delete(guestID, f.Name, nil); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	return s.guestFIPIn(t, rangeName)
}

// dropEcho deletes the echo Service, so that the next test's is given the guest's address anew.
func (s *suite) dropEcho(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := s.guestKube.CoreV1().Services("default").Delete(ctx, "echo", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	rig.Eventually(t, time.Minute, "the echo Service gone", func() bool {
		_, err := s.guestKube.CoreV1().Services("default").Get(ctx, "echo", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// TestKubevipAnnouncesOnTheRangesNIC: on real nodes, a guest whose node is on two VM networks and
// whose range is on the second. The guest's VM shows in Harvester with its first NIC on the
// range's network, which the guest names enp2s0 (the node's second link; enp1s0, the name
// kube-vip is given by default, is its link to the first network): kube-vip announces the
// guest's address on enp2s0, and a client on that network reaches the echo Service at it. With
// Harvester reporting a NIC name the node lacks, kube-vip cannot start there and the FloatingIP is
// not Ready, its Served condition naming the node. The guest then goes back to its first network.
func TestKubevipAnnouncesOnTheRangesNIC(t *testing.T) {
	s := current(t)
	ctx := context.Background()
	hv := s.harvesterCluster(t)
	seg, err := s.guest.AddSegment(secondLink)
	rig.Must(t, err)
	if _, err := hv.NAD(ctx, "default", "vlan112", "mgmt", 100+guestIndex, seg.Prefix.String(), ""); err != nil {
		t.Fatal(err)
	}
	vm := harvester.VM{Namespace: "default", Name: guestName + "-pool1-6b7c8d9e0-zq4xk", GuestCluster: guestName, NICs: []harvester.NIC{
		{Name: "nic-0", Network: "default/vlan112", GuestName: secondLink, Addresses: []string{seg.NodeAddr.String()}},
		{Name: "nic-1", Network: "default/vlan12", GuestName: node.NodeInterface, Addresses: []string{s.guest.NodeAddr.String()}},
	}}
	rig.Must(t, hv.CreateVM(ctx, vm))
	block := seg.Prefix.Addr().As4()
	block[3] = 96
	second := &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: "e2e-second", Annotations: map[string]string{
		v1.AnnotationHarvesterClusterName: harvesterName, v1.AnnotationHarvesterNetworkName: "default/vlan112"}},
		Spec: v1.FloatingIPRangeSpec{IPRange: netip.PrefixFrom(netip.AddrFrom4(block), 28).String()}}
	if _, err := s.fips.FloatingIPRange().Create(second); err != nil {
		t.Fatal(err)
	}
	s.setGuestNetworks(t, "default/vlan112", "default/vlan12")
	t.Cleanup(func() {
		// Back to the first network: the VM gone, the guest's address of e2e-guests again.
		s.dropEcho(t)
		rig.Must(t, hv.DeleteVM(ctx, vm.Namespace, vm.Name))
		s.setGuestNetworks(t, "default/vlan12")
		s.renewGuestFIP(t, "e2e-guests")
		if err := s.fips.FloatingIPRange().Delete(second.Name, nil); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})

	addr := s.renewGuestFIP(t, second.Name)
	// A Service keeps the address it was given: the echo Service of the first network goes.
	s.dropEcho(t)
	s.echoServedOn(t, vmNetwork{secondLink, seg.ClientNamespace}, addr, "kube-vip on the range's NIC")
	s.waitServed(t, time.Minute, v1.ReasonServed)
	if on, _ := s.onInterface(t, node.NodeInterface, addr); on {
		t.Errorf("%s is on %s as well, the link to the other network", addr, node.NodeInterface)
	}

	// The guest agent reports a name the node has no link of.
	rig.Must(t, hv.SetGuestName(ctx, vm.Namespace, vm.Name, "nic-0", "ens9"))
	x := s.waitServed(t, 3*time.Minute, v1.ReasonServePending, v1.ReasonKubevipNotReady)
	rig.Eventually(t, 2*time.Minute, "the Served condition naming node "+s.guest.Name+", where kube-vip exited", func() bool {
		x = s.waitServed(t, time.Minute, v1.ReasonServePending, v1.ReasonKubevipNotReady)
		c, _ := v1.GetCondition(x.Status.Conditions, v1.Served)
		return strings.Contains(c.Message, "on node "+s.guest.Name+": container kube-vip ") &&
			(strings.Contains(c.Message, "terminated") || strings.Contains(c.Message, "CrashLoopBackOff"))
	})
	if v1.Ready.IsTrue(x) {
		t.Errorf("the FloatingIP is Ready while kube-vip cannot start on the guest's node: %v", x.Status.Conditions)
	}
	c, _ := v1.GetCondition(x.Status.Conditions, v1.Served)
	t.Logf("with Harvester naming the NIC ens9: Served %s: %s", c.Reason, c.Message)
}
