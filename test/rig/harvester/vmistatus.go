package harvester

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"net/netip"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The origins of a VMI interface's status KubeVirt v1.7.0 names (pkg/network/vmispec/infosource.go).
const (
	InfoSourceDomain       = "domain"
	InfoSourceGuestAgent   = "guest-agent"
	InfoSourceMultusStatus = "multus-status"
	infoSeparator          = ", "
	primaryPodInterface    = "eth0"
)

// interfaceStatuses is status.interfaces of a running VMI of vm, as virt-handler
// (pkg/network/setup/netstat.go UpdateStatus) and virt-controller (pkg/network/controllers/vmi.go
// UpdateVMIStatus) of KubeVirt v1.7.0 leave it: one entry a NIC, the pod network's first, each
// with its VM network name, MAC, one queue and link state up from the domain. With an agent, the
// entry matched by MAC gets the guest's interface name and, but for the pod network (whose
// addresses are the pod's), the guest's addresses, IPv4 before IPv6, and its info source becomes
// "domain, guest-agent"; the guest's other interfaces follow, from the agent alone. A Multus
// network's entry gets "multus-status" added and its hashed pod interface name once
// virt-controller has read the launcher pod's network-status annotation; the pod network's pod
// interface is eth0.
func interfaceStatuses(vm VM, nics []NIC) []interface{} {
	var out []interface{}
	ordered := make([]NIC, 0, len(nics))
	for _, nic := range nics {
		if nic.Network == "" {
			ordered = append([]NIC{nic}, ordered...)
		} else {
			ordered = append(ordered, nic)
		}
	}
	for _, nic := range ordered {
		entry := map[string]interface{}{
			"name": nic.Name, "mac": nic.MAC, "queueCount": int64(1), "linkState": "up",
			"infoSource": InfoSourceDomain, "podInterfaceName": primaryPodInterface,
		}
		addresses := nic.Addresses
		if !vm.NoAgent {
			entry["interfaceName"] = nic.GuestName
			entry["infoSource"] = InfoSourceDomain + infoSeparator + InfoSourceGuestAgent
		} else if nic.Network != "" {
			addresses = nil
		}
		if nic.Network != "" {
			entry["infoSource"] = entry["infoSource"].(string) + infoSeparator + InfoSourceMultusStatus
			entry["podInterfaceName"] = hashedPodInterface(nic.Name)
		}
		setAddresses(entry, v4First(addresses))
		out = append(out, entry)
	}
	if vm.NoAgent {
		return out
	}
	for _, g := range vm.GuestOnly {
		entry := map[string]interface{}{"interfaceName": g.GuestName, "mac": g.MAC, "infoSource": InfoSourceGuestAgent}
		setAddresses(entry, g.Addresses)
		out = append(out, entry)
	}
	return out
}

// SetAddresses sets the addresses the agent reports for one interface of VMI namespace/name,
// named by its VM network (name) or, for an interface only the agent reports, its name in the
// guest: what a guest that takes an address by DHCP, or has kube-vip add a floating one to its
// NIC, shows. No addresses clear them, as an agent that reports none does.
func (c *Cluster) SetAddresses(ctx context.Context, namespace, name, iface string, addresses ...string) error {
	return c.editInterface(ctx, namespace, name, iface, "addresses", func(entry map[string]interface{}) {
		if _, named := entry["name"]; named {
			// KubeVirt orders a known NIC's addresses IPv4 first; the agent's own as given.
			addresses = v4First(addresses)
		}
		setAddresses(entry, addresses)
	})
}

// SetGuestName sets the name the agent reports for the NIC nic (its VM network's name) of VMI
// namespace/name: what a guest whose image names its NICs otherwise shows once it runs.
func (c *Cluster) SetGuestName(ctx context.Context, namespace, name, nic, guestName string) error {
	return c.editInterface(ctx, namespace, name, nic, "guest name", func(entry map[string]interface{}) {
		entry["interfaceName"] = guestName
	})
}

// editInterface edits the status entry of one interface of VMI namespace/name, named by its VM
// network (name) or its name in the guest.
func (c *Cluster) editInterface(ctx context.Context, namespace, name, iface, what string, edit func(map[string]interface{})) error {
	_, err := c.change(ctx, VMIResource, namespace, name, false, func(vmi *unstructured.Unstructured) error {
		entries, _, err := unstructured.NestedSlice(vmi.Object, "status", "interfaces")
		if err != nil {
			return err
		}
		for _, want := range []string{"name", "interfaceName"} {
			for _, e := range entries {
				entry, ok := e.(map[string]interface{})
				if !ok || entry[want] != iface {
					continue
				}
				edit(entry)
				return unstructured.SetNestedSlice(vmi.Object, entries, "status", "interfaces")
			}
		}
		return fmt.Errorf("no interface %s", iface)
	})
	if err != nil {
		return fmt.Errorf("setting the %s of VMI %s/%s: %w", what, namespace, name, err)
	}
	return nil
}

// setAddresses puts addresses into an interface's status: all as ipAddresses, and as ipAddress the
// first IPv4 one (the agent poller prefers IPv4), or the first; none removes both.
func setAddresses(entry map[string]interface{}, addresses []string) {
	delete(entry, "ipAddress")
	delete(entry, "ipAddresses")
	if len(addresses) == 0 {
		return
	}
	list := make([]interface{}, len(addresses))
	first := ""
	for i, a := range addresses {
		list[i] = a
		if ip, err := netip.ParseAddr(a); first == "" && err == nil && ip.Is4() {
			first = a
		}
	}
	if first == "" {
		first = addresses[0]
	}
	entry["ipAddress"], entry["ipAddresses"] = first, list
}

// v4First is addresses with the IPv4 ones first, each family in its order, as KubeVirt merges an
// agent's addresses into a known interface's.
func v4First(addresses []string) []string {
	var v4, other []string
	for _, a := range addresses {
		if ip, err := netip.ParseAddr(a); err == nil && ip.Is4() {
			v4 = append(v4, a)
		} else {
			other = append(other, a)
		}
	}
	return append(v4, other...)
}

// hashedPodInterface is the launcher pod's interface of VM network network, "pod" and the first
// 11 hex digits of the SHA-256 of its name (pkg/network/namescheme GenerateHashedInterfaceName).
func hashedPodInterface(network string) string {
	return fmt.Sprintf("pod%x", sha256.Sum256([]byte(network)))[:len("pod")+11]
}

// DefaultMAC is the MAC address CreateVM gives interface nic of VM namespace/name when the NIC
// names none: what a test puts into a DHCP pool's leases for that VM.
func DefaultMAC(namespace, name, nic string) string {
	return localMAC(namespace + "/" + name + "/" + nic)
}

// localMAC is a unicast, locally administered MAC address derived from seed: what Harvester's VM
// webhook generates at random (pkg/util/network GenerateLAAMacAddress), but the same each run.
func localMAC(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	mac := net.HardwareAddr(sum[:6])
	mac[0] = mac[0]&0xfe | 0x02
	return mac.String()
}
