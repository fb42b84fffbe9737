package node

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/kubefip/kube-fip-operator/test/rig/dataplane"
)

// NodeInterface is the name of the node's link to its network: a Harvester VM's first virtio NIC's,
// the interface the operator's default kube-vip values name.
const NodeInterface = "enp1s0"

// network is one cluster's namespaces and links (see the package comment).
type network struct {
	index                          int
	lan, node, client              string
	lan2, client2                  string
	HostAddr, NodeAddr, ClientAddr netip.Addr
	hostLink                       string
	// lock is held while the network exists, so that two runs on one machine never share an index.
	lock *os.File
}

// addresses of cluster i: its /24 in 198.18.0.0/16, its pods' and Services' in 198.19.0.0/16.
func addressesOf(i int) (host, node, client netip.Addr, pods, services netip.Prefix) {
	base := netip.AddrFrom4([4]byte{198, 18, byte(i), 0})
	host, node, client = base.Next(), base.Next().Next(), base.Next().Next().Next()
	pods = netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 19, byte(2 * i), 0}), 24)
	services = netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 19, byte(2*i + 1), 0}), 24)
	return
}

// newNetwork creates the namespaces kfo<i>-lan, kfo<i>-node and kfo<i>-client and wires them.
func newNetwork(i int) (*network, error) {
	if i < 1 || i > 100 {
		return nil, fmt.Errorf("cluster index %d: must be from 1 to 100", i)
	}
	n := &network{index: i, lan: fmt.Sprintf("kfo%d-lan", i), node: fmt.Sprintf("kfo%d-node", i), client: fmt.Sprintf("kfo%d-client", i),
		lan2: fmt.Sprintf("kfo%d-lan2", i), client2: fmt.Sprintf("kfo%d-client2", i), hostLink: fmt.Sprintf("kfo%d", i)}
	n.HostAddr, n.NodeAddr, n.ClientAddr, _, _ = addressesOf(i)
	lock, err := os.OpenFile(fmt.Sprintf("/run/kube-fip-node-%d.lock", i), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("cluster index %d is in use by another run on this machine: %w", i, err)
	}
	n.lock = lock
	n.remove() // what a killed run left behind
	if err := n.wire(); err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

func (n *network) wire() error {
	for _, name := range []string{n.lan, n.node, n.client} {
		if err := newNamed(name); err != nil {
			return err
		}
	}
	// One veth a machine: its end named as the machine's interface (the host's kfo<i>), the other a
	// bridge port.
	if err := plug(n.lan, n.HostAddr, machine{"", n.hostLink, "host", n.HostAddr},
		machine{n.node, NodeInterface, "node", n.NodeAddr}, machine{n.client, "eth0", "client", n.ClientAddr}); err != nil {
		return err
	}
	return n.routeServices()
}

// machine is one machine's link into a LAN: a veth whose end in the machine's namespace (the
// host's for "") is named end and has addr in a /24, and whose other end is the bridge's port.
type machine struct {
	ns, end, port string
	addr          netip.Addr
}

// plug makes a bridge in the namespace lan and plugs every machine into it. A machine in a
// namespace of its own gets its loopback up and, when gw is valid, a default route through gw.
func plug(lan string, gw netip.Addr, machines ...machine) error {
	h, err := handleIn(lan)
	if err != nil {
		return err
	}
	defer h.Close()
	bridge := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}
	if err := h.LinkAdd(bridge); err != nil {
		return fmt.Errorf("creating the bridge of %s: %w", lan, err)
	}
	if err := h.LinkSetUp(bridge); err != nil {
		return err
	}
	lanFD, err := netns.GetFromName(lan)
	if err != nil {
		return err
	}
	defer lanFD.Close()
	for _, m := range machines {
		if err := m.link(lanFD, gw); err != nil {
			return err
		}
		port, err := h.LinkByName(m.port)
		if err != nil {
			return err
		}
		if err := h.LinkSetMaster(port, bridge); err != nil {
			return err
		}
		if err := h.LinkSetUp(port); err != nil {
			return err
		}
	}
	return nil
}

// link creates the machine's veth with its port in the namespace lan.
func (m machine) link(lan netns.NsHandle, gw netip.Addr) error {
	h, err := handleIn(m.ns)
	if err != nil {
		return err
	}
	defer h.Close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: m.end}, PeerName: m.port, PeerNamespace: netlink.NsFd(lan)}
	if err := h.LinkAdd(veth); err != nil {
		return fmt.Errorf("creating %s of %s: %w", m.end, orHost(m.ns), err)
	}
	link, err := h.LinkByName(m.end)
	if err != nil {
		return err
	}
	if err := h.AddrAdd(link, &netlink.Addr{IPNet: &net.IPNet{IP: m.addr.AsSlice(), Mask: net.CIDRMask(24, 32)}}); err != nil {
		return err
	}
	if err := h.LinkSetUp(link); err != nil {
		return err
	}
	if m.ns == "" {
		return nil
	}
	lo, err := h.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := h.LinkSetUp(lo); err != nil {
		return err
	}
	if !gw.IsValid() {
		return nil
	}
	return h.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Gw: gw.AsSlice()})
}

// Segment is a second VM network of a cluster's node: another LAN, which the node joins through a
// second link, and a client on it.
type Segment struct {
	// Link is the node's interface on the segment.
	Link string
	// Prefix is the segment's /24, NodeAddr the node's address there and ClientAddr the client's.
	Prefix               netip.Prefix
	NodeAddr, ClientAddr netip.Addr
	// ClientNamespace is the client's network namespace.
	ClientNamespace string
}

// addSegment wires the node into a second LAN, kfo<i>-lan2 (198.18.<100+i>.0/24), through a link
// named link, with a client (kfo<i>-client2) there. Neither has a route off the segment: it is a
// VM network of its own, which the host does not join.
func (n *network) addSegment(link string) (Segment, error) {
	base := netip.AddrFrom4([4]byte{198, 18, byte(100 + n.index), 0})
	s := Segment{Link: link, Prefix: netip.PrefixFrom(base, 24), NodeAddr: base.Next().Next(), ClientAddr: base.Next().Next().Next(),
		ClientNamespace: n.client2}
	for _, name := range []string{n.lan2, n.client2} {
		if err := newNamed(name); err != nil {
			return Segment{}, err
		}
	}
	err := plug(n.lan2, netip.Addr{}, machine{n.node, link, "node", s.NodeAddr}, machine{n.client2, "eth0", "client", s.ClientAddr})
	return s, err
}

// routeServices sends the host's traffic for the cluster's Services to the node, where kube-proxy
// forwards it, as on a node that runs the API server beside kube-proxy: the API server calls an
// admission webhook at its Service's ClusterIP. The route goes with the host's link.
func (n *network) routeServices() error {
	h, err := handleIn("")
	if err != nil {
		return err
	}
	defer h.Close()
	link, err := h.LinkByName(n.hostLink)
	if err != nil {
		return err
	}
	_, _, _, _, services := addressesOf(n.index)
	dst := &net.IPNet{IP: services.Addr().AsSlice(), Mask: net.CIDRMask(services.Bits(), 32)}
	if err := h.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: dst, Gw: net.IP(n.NodeAddr.AsSlice())}); err != nil {
		return fmt.Errorf("routing %s to the node: %w", services, err)
	}
	return nil
}

func orHost(ns string) string {
	if ns == "" {
		return "the host"
	}
	return ns
}

// remove deletes the namespaces, and with them every link in them; the host's end of its veth goes
// with its peer.
func (n *network) remove() {
	for _, name := range []string{n.client2, n.lan2, n.client, n.node, n.lan} {
		_ = netns.DeleteNamed(name)
	}
	if h, err := netlink.NewHandle(); err == nil {
		if link, err := h.LinkByName(n.hostLink); err == nil {
			_ = h.LinkDel(link)
		}
		h.Close()
	}
}

// close removes the network and lets another run have its index.
func (n *network) close() {
	n.remove()
	if n.lock != nil {
		n.lock.Close()
	}
}

// newNamed creates the network namespace name (/run/netns/name); the calling thread stays where it
// was.
func newNamed(name string) error {
	here, err := netns.Get()
	if err != nil {
		return err
	}
	defer here.Close()
	return dataplane.In(here, func() error {
		ns, err := netns.NewNamed(name)
		if err != nil {
			return fmt.Errorf("creating network namespace %s: %w", name, err)
		}
		return ns.Close()
	})
}

// handleIn is a netlink handle in namespace name, or the host's for "".
func handleIn(name string) (*netlink.Handle, error) {
	if name == "" {
		return netlink.NewHandle()
	}
	ns, err := netns.GetFromName(name)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	return netlink.NewHandleAt(ns)
}

// errNotRoot: the suite needs root for network namespaces, mounts and containers.
var errNotRoot = errors.New("the clusters whose kubelet runs pods need root")

// canRun reports why this machine cannot run a cluster, or nil.
func canRun() error {
	if os.Geteuid() != 0 {
		return errNotRoot
	}
	return nil
}
