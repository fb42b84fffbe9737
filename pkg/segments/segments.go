// Package segments reads what a Harvester cluster says about its L2 segments: which VM network
// (NetworkAttachmentDefinition) is on which segment, and which addresses Harvester's own
// components hand out or use there — load balancer IPPools, vm-dhcp-controller IPPools and the
// addresses VirtualMachineInstances report. A floating IP range that shares a segment with any of
// them can hand out an address something else already answers for.
//
// The cluster is untrusted: everything is read through a Getter whose client bounds each answer,
// in pages whose number, objects and bytes Limits bound, and every object is decoded into a small
// struct holding only what is needed. An object that does not parse is skipped and counted, never
// trusted in part. Parsing (the parse* functions and the builder) is separate from reading (Read),
// so it can be tested and fuzzed on its own.
package segments

import (
	"fmt"
	"net/netip"
	"strconv"
)

// Segment is one L2 broadcast domain of a Harvester cluster.
type Segment struct {
	// Cluster is the Harvester cluster's Rancher management cluster id.
	Cluster string
	// ClusterNetwork is the NAD's network.harvesterhci.io/clusternetwork label: the bridge name
	// less "-br".
	ClusterNetwork string
	// VLAN is the access VLAN; 0 means untagged.
	VLAN int
	// Isolated is, for a network that is a broadcast domain of its own rather than a VLAN of its
	// cluster network's bridge, the NAD's "namespace/name": a kube-ovn overlay, which Harvester
	// labels with cluster network mgmt although it is no part of mgmt's untagged L2, and a VLAN
	// trunk, whose frames carry VLANs the guest chooses. "" for a VLAN or an untagged network.
	Isolated string
}

// String names the segment for a message: "cluster network mgmt, VLAN 10". Every part of it was
// checked to be a DNS-1123 name or a number when it was read, so it needs no quoting.
func (s Segment) String() string {
	switch {
	case s == Segment{}:
		return "any segment"
	case s.Isolated != "":
		return "network " + s.Isolated + " on cluster network " + s.ClusterNetwork
	case s.VLAN == 0:
		return "cluster network " + s.ClusterNetwork + ", untagged"
	}
	return "cluster network " + s.ClusterNetwork + ", VLAN " + strconv.Itoa(s.VLAN)
}

// Network is one NetworkAttachmentDefinition as Harvester's network controller labels it.
type Network struct {
	Namespace, Name string
	Segment         Segment
	// Type is the network type as the network controller labels it (network.harvesterhci.io/type):
	// L2VlanNetwork, UntaggedNetwork, L2VlanTrunkNetwork or OverlayNetwork.
	Type string
	// CIDR is the route annotation's (network.harvesterhci.io/route) "cidr"; zero when absent,
	// invalid, or marked outdated (the VLAN changed since the network controller learned it).
	CIDR netip.Prefix
	// Gateway is the route annotation's "gateway", under the same terms.
	Gateway netip.Addr
}

// String is the network's "namespace/name".
func (n Network) String() string { return n.Namespace + "/" + n.Name }

// The network types of network-controller-harvester (pkg/utils/nad.go).
const (
	TypeVLAN     = "L2VlanNetwork"
	TypeUntagged = "UntaggedNetwork"
	TypeTrunk    = "L2VlanTrunkNetwork"
	TypeOverlay  = "OverlayNetwork"
)

// Kind is what a claim is, and which kind of object a skip or an absent API is about.
type Kind string

const (
	// KindLoadBalancerPool is a loadbalancer.harvesterhci.io IPPool whose spec.selector.network is
	// on the claim's segment.
	KindLoadBalancerPool Kind = "LoadBalancerPool"
	// KindGlobalLoadBalancerPool is a global pool (one scope, with project, namespace and
	// guestCluster all "*"), one with no network, or one whose network the read did not find: it
	// may hand out on any segment.
	KindGlobalLoadBalancerPool Kind = "GlobalLoadBalancerPool"
	// KindDHCPPool is a network.harvesterhci.io IPPool of vm-dhcp-controller.
	KindDHCPPool Kind = "DHCPPool"
	// KindVM is an address a VirtualMachineInstance reports; for skips and absent APIs, the
	// VirtualMachineInstances.
	KindVM Kind = "VM"
	// KindNetwork is a NetworkAttachmentDefinition, for skips and absent APIs only.
	KindNetwork Kind = "Network"
)

// Claim is a run of addresses something in Harvester hands out or uses.
type Claim struct {
	Kind Kind
	// Object names what claims, for a message: "IPPool pool-a", "IPPool default/vlan10-dhcp
	// (DHCP server)", "VirtualMachineInstance default/node-1". Names in it were checked to be
	// Kubernetes names when read; one whose network was not found says so.
	Object string
	// First and Last bound the run, inclusive, of one family.
	First, Last netip.Addr
	// Guest is, for KindVM, the Rancher provisioning cluster the VM belongs to (the VirtualMachine's
	// label guestcluster.harvesterhci.io/name); "" for another VM.
	Guest string
	// Segment is where the addresses are claimed; zero for a claim that may be on any segment: a
	// global pool, or a load balancer pool or VM whose network the read did not find (its Object
	// says so). Overlapping returns those for every segment.
	Segment Segment
}

func (c Claim) String() string {
	if c.First == c.Last {
		return fmt.Sprintf("%s %s on %s", c.Object, c.First, c.Segment)
	}
	return fmt.Sprintf("%s %s-%s on %s", c.Object, c.First, c.Last, c.Segment)
}

// Interface is one NIC of a VM on one network.
type Interface struct {
	// VM is the VMI's "namespace/name".
	VM string
	// Guest is the provisioning cluster name, "" when the VM has no guest label.
	Guest string
	// Network is the NAD's "namespace/name" (spec.networks[].multus.networkName, qualified with
	// the VMI's namespace when bare).
	Network string
	// InterfaceName is the guest OS's name for the NIC (status.interfaces[].interfaceName, from the
	// guest agent only); "" when unknown. The guest chose it: quote it in a message.
	InterfaceName string
	Addresses     []netip.Addr
}

// MaxSkippedNames is how many names View.Skipped keeps of each kind: enough for a message.
const MaxSkippedNames = 5

// View is what one read of one Harvester cluster found. It is not changed after Read returns it;
// a View built by hand is made ready for NetworkNamed and Overlapping by Reindex.
type View struct {
	Cluster  string
	Networks []Network
	// Claims are every segment's, sorted by Segment, then First.
	Claims     []Claim
	Interfaces []Interface
	// Limited, when not empty, names each limit that ended the read of a kind early
	// ("VirtualMachineInstances: MaxPages (400 pages)"); what was read before is kept.
	Limited string
	// Skipped names, by kind, up to MaxSkippedNames objects that could not be read (malformed, or
	// a DHCP pool whose network was not found), or only in part (a VMI with a malformed address);
	// SkippedCount counts them all. The names are as the cluster sent them, cut to
	// redact.MaxValue bytes: quote them in a message.
	Skipped      map[Kind][]string
	SkippedCount map[Kind]int
	// Absent are the kinds whose API the cluster does not serve (a Harvester without
	// vm-dhcp-controller has no DHCP pools): read as empty lists.
	Absent []Kind
	// Requests counts the requests the read made.
	Requests int

	idx *index
}

// skip records an object that could not be read.
func (v *View) skip(k Kind, name string) {
	if v.Skipped == nil {
		v.Skipped, v.SkippedCount = map[Kind][]string{}, map[Kind]int{}
	}
	v.SkippedCount[k]++
	if len(v.Skipped[k]) < MaxSkippedNames {
		v.Skipped[k] = append(v.Skipped[k], name)
	}
}
