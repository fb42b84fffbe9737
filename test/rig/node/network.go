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
		hostLink: fmt.Sprintf("kfo%d", i)}
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
	lan, err := handleIn(n.lan)
	if err != nil {
		return err
	}
	defer lan.Close()
	bridge := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}
	if err := lan.LinkAdd(bridge); err != nil {
		return fmt.Errorf("creating the bridge of %s: %w", n.lan, err)
	}
	if err := lan.LinkSetUp(bridge); err != nil {
		return err
	}
	lanFD, err := netns.GetFromName(n.lan)
	if err != nil {
		return err
	}
	defer lanFD.Close()
	// One veth a machine: its end named as the machine's interface (the host's kfo<i>), the other a
	// bridge port.
	for _, m := range []struct {
		ns, end, port string
		addr          netip.Addr
	}{{"", n.hostLink, "host", n.HostAddr}, {n.node, NodeInterface, "node", n.NodeAddr}, {n.client, "eth0", "client", n.ClientAddr}} {
		h, err := handleIn(m.ns)
		if err != nil {
			return err
		}
		err = func() error {
			defer h.Close()
			veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: m.end}, PeerName: m.port, PeerNamespace: netlink.NsFd(lanFD)}
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
			gw := net.IP(n.HostAddr.AsSlice())
			return h.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Gw: gw})
		}()
		if err != nil {
			return err
		}
		port, err := lan.LinkByName(m.port)
		if err != nil {
			return err
		}
		if err := lan.LinkSetMaster(port, bridge); err != nil {
			return err
		}
		if err := lan.LinkSetUp(port); err != nil {
			return err
		}
	}
	return n.routeServices()
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
	for _, name := range []string{n.client, n.node, n.lan} {
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
