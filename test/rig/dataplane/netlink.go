package dataplane

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Link is a layer-2 link between two network namespaces of the test's own: "node", where kube-vip
// runs as on a guest's control-plane node, and "client", a machine on the same VM network. It
// stands in for a Harvester VM network; its addresses come from 198.18.0.0/15 (RFC 2544), so
// nothing collides with a real network.
type Link struct {
	Node, Client netns.NsHandle
	// NodeInterface is the node's end, named as the kube-vip values name the interface.
	NodeInterface string
	// NodeAddr and ClientAddr are the machines' own addresses, in Prefix.
	NodeAddr, ClientAddr netip.Addr
	Prefix               netip.Prefix
}

// ErrNoNetAdmin means the test cannot create network namespaces (it needs root or CAP_NET_ADMIN).
var ErrNoNetAdmin = errors.New("creating network namespaces needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN)")

// CanCreateLinks reports whether this process may create network namespaces and links.
func CanCreateLinks() error {
	var caps unix.CapUserData
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_1}
	if err := unix.Capget(&hdr, &caps); err != nil {
		return fmt.Errorf("%w: %v", ErrNoNetAdmin, err)
	}
	for _, c := range []uint{unix.CAP_NET_ADMIN, unix.CAP_SYS_ADMIN} {
		if caps.Effective&(1<<c) == 0 {
			return ErrNoNetAdmin
		}
	}
	return nil
}

// NewLink creates the two namespaces and a veth pair between them: the node's end is named
// nodeInterface and holds the node's address, the client's end "eth0" with the client's address,
// both in prefix, and loopback is up in the node. Close removes everything.
func NewLink(nodeInterface string, prefix netip.Prefix, nodeAddr, clientAddr netip.Addr) (*Link, error) {
	if err := CanCreateLinks(); err != nil {
		return nil, err
	}
	l := &Link{NodeInterface: nodeInterface, NodeAddr: nodeAddr, ClientAddr: clientAddr, Prefix: prefix, Node: -1, Client: -1}
	var err error
	if l.Node, err = newNamespace(); err != nil {
		return nil, err
	}
	if l.Client, err = newNamespace(); err != nil {
		l.Close()
		return nil, err
	}
	if err := l.wire(); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// newNamespace creates a network namespace and returns a handle to it; the calling thread stays
// where it was.
func newNamespace() (netns.NsHandle, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return -1, err
	}
	defer orig.Close()
	ns, err := netns.New()
	if err != nil {
		return -1, fmt.Errorf("creating a network namespace: %w", err)
	}
	if err := netns.Set(orig); err != nil {
		ns.Close()
		return -1, fmt.Errorf("returning to the test's network namespace: %w", err)
	}
	return ns, nil
}

func (l *Link) wire() error {
	node, err := netlink.NewHandleAt(l.Node)
	if err != nil {
		return err
	}
	defer node.Close()
	client, err := netlink.NewHandleAt(l.Client)
	if err != nil {
		return err
	}
	defer client.Close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: l.NodeInterface}, PeerName: "eth0", PeerNamespace: netlink.NsFd(l.Client)}
	if err := node.LinkAdd(veth); err != nil {
		return fmt.Errorf("creating the veth pair: %w", err)
	}
	bits := l.Prefix.Bits()
	for _, end := range []struct {
		h    *netlink.Handle
		name string
		addr netip.Addr
	}{{node, l.NodeInterface, l.NodeAddr}, {client, "eth0", l.ClientAddr}} {
		link, err := end.h.LinkByName(end.name)
		if err != nil {
			return err
		}
		ipnet := &net.IPNet{IP: end.addr.AsSlice(), Mask: net.CIDRMask(bits, end.addr.BitLen())}
		if err := end.h.AddrAdd(link, &netlink.Addr{IPNet: ipnet}); err != nil {
			return fmt.Errorf("adding %s to %s: %w", end.addr, end.name, err)
		}
		if err := end.h.LinkSetUp(link); err != nil {
			return err
		}
	}
	lo, err := node.LinkByName("lo")
	if err != nil {
		return err
	}
	return node.LinkSetUp(lo)
}

// In runs fn on a thread inside ns. Sockets fn opens stay in ns; a process fn starts runs there.
func In(ns netns.NsHandle, fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return err
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		return fmt.Errorf("entering a network namespace: %w", err)
	}
	ferr := fn()
	if err := netns.Set(orig); err != nil {
		// The thread is in the wrong namespace: keep it locked so that it dies with this goroutine.
		runtime.LockOSThread()
		return fmt.Errorf("returning to the test's network namespace: %w", err)
	}
	return ferr
}

// nodeLink is a netlink handle in the node's namespace and the node's interface; close the handle.
func (l *Link) nodeLink() (*netlink.Handle, netlink.Link, error) {
	h, err := netlink.NewHandleAt(l.Node)
	if err != nil {
		return nil, nil, err
	}
	link, err := h.LinkByName(l.NodeInterface)
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	return h, link, nil
}

// Addresses lists the addresses on the node's interface.
func (l *Link) Addresses() ([]netip.Addr, error) {
	h, link, err := l.nodeLink()
	if err != nil {
		return nil, err
	}
	defer h.Close()
	addrs, err := h.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			out = append(out, ip.Unmap())
		}
	}
	return out, nil
}

// NodeMAC is the hardware address of the node's interface.
func (l *Link) NodeMAC() (net.HardwareAddr, error) {
	h, link, err := l.nodeLink()
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return link.Attrs().HardwareAddr, nil
}

// ClientNeighbour is what the client learnt of addr's hardware address: over ARP for an IPv4
// address, over neighbour discovery for an IPv6 one.
func (l *Link) ClientNeighbour(addr netip.Addr) (net.HardwareAddr, error) {
	h, err := netlink.NewHandleAt(l.Client)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	family := netlink.FAMILY_V4
	if addr.Is6() && !addr.Is4In6() {
		family = netlink.FAMILY_V6
	}
	neighs, err := h.NeighList(0, family)
	if err != nil {
		return nil, err
	}
	for _, n := range neighs {
		if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == addr && len(n.HardwareAddr) > 0 {
			return n.HardwareAddr, nil
		}
	}
	return nil, fmt.Errorf("the client has no neighbour entry for %s", addr)
}

// Close removes the namespaces, and with them the link.
func (l *Link) Close() {
	for _, ns := range []netns.NsHandle{l.Node, l.Client} {
		if ns >= 0 {
			_ = ns.Close()
		}
	}
}

// RemoveAddress takes addr off the node's interface, as a node that restarts loses it.
func (l *Link) RemoveAddress(addr netip.Addr) error {
	h, link, err := l.nodeLink()
	if err != nil {
		return err
	}
	defer h.Close()
	err = h.AddrDel(link, &netlink.Addr{IPNet: &net.IPNet{IP: addr.AsSlice(), Mask: net.CIDRMask(addr.BitLen(), addr.BitLen())}})
	if err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
		return err
	}
	return nil
}
