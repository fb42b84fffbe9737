package segments

import (
	"encoding/json"
	"net/netip"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

// labelGuest is what docker-machine-driver-harvester (v1.0.6, harvester/create.go) labels a guest
// cluster's VirtualMachine with: the provisioning cluster's name. The VMI carries it too: the
// driver builds the VM with Harvester's VMBuilder, whose labels are those of the VM and of its
// template alike (harvester pkg/builder NewVMBuilder), and KubeVirt copies the template's labels
// to the VMI; Harvester's own VMI controller reads the driver's labels there. So the VMIs alone
// are read, not the VirtualMachines as well.
const labelGuest = "guestcluster.harvesterhci.io/name"

// maxInterfaceName bounds the guest OS's name of a NIC that is kept: a Linux name has at most 15
// bytes, a Windows one ("Ethernet 2") a few more; anything longer is no name worth repeating.
const maxInterfaceName = 64

// vmiObject is what is read of a VirtualMachineInstance (kubevirt.io/v1, kubevirt/api v1.7.0):
// its networks and the interfaces its status reports.
type vmiObject struct {
	Metadata struct {
		Namespace string            `json:"namespace"`
		Name      string            `json:"name"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Networks []struct {
			Name   string `json:"name"`
			Multus *struct {
				NetworkName string `json:"networkName"`
			} `json:"multus"`
		} `json:"networks"`
	} `json:"spec"`
	Status struct {
		Interfaces []struct {
			Name          string   `json:"name"`
			InterfaceName string   `json:"interfaceName"`
			IPAddress     string   `json:"ipAddress"`
			IPAddresses   []string `json:"ipAddresses"`
		} `json:"interfaces"`
	} `json:"status"`
}

// parseVMI reads a VirtualMachineInstance's NICs on Multus networks and the addresses they report.
// A status interface belongs to a network by its name (KubeVirt names it after spec.networks[]);
// one without a name is an interface only the guest agent knows (a bridge, a VLAN device, a pod's
// veth in a guest cluster) and one on the pod network has no segment: both are left out. partial
// is true when an address or a network reference was malformed and left out.
func parseVMI(item []byte, segmentOf segmentFunc) (ifaces []Interface, claims []Claim, partial bool, err error) {
	var o vmiObject
	if err := json.Unmarshal(item, &o); err != nil {
		return nil, nil, false, err
	}
	m := o.Metadata
	if m.Namespace == "" || !validNames(m.Namespace, m.Name) {
		return nil, nil, false, errBadName
	}
	vm := m.Namespace + "/" + m.Name
	guest := m.Labels[labelGuest]
	if guest != "" && len(validation.IsValidLabelValue(guest)) > 0 {
		return nil, nil, false, errBadName
	}
	nets := map[string]string{}
	for _, n := range o.Spec.Networks {
		if n.Multus == nil {
			continue
		}
		// kubevirt/api MultusNetwork: "<name>" or "<namespace>/<name>"; without a namespace, the
		// VMI's.
		ref, ok := splitNetwork(n.Multus.NetworkName, m.Namespace)
		if !ok {
			partial = true
			continue
		}
		nets[n.Name] = ref
	}
	for _, st := range o.Status.Interfaces {
		ref, ok := nets[st.Name]
		if st.Name == "" || !ok {
			continue
		}
		list := st.IPAddresses
		if len(list) == 0 && st.IPAddress != "" {
			list = []string{st.IPAddress}
		}
		iface := Interface{VM: vm, Guest: guest, Network: ref, InterfaceName: interfaceName(st.InterfaceName)}
		for _, s := range list {
			a, ok := vmiAddr(s)
			if !ok {
				partial = true
				continue
			}
			if usable(a) && !slices.Contains(iface.Addresses, a) {
				iface.Addresses = append(iface.Addresses, a)
			}
		}
		ifaces = append(ifaces, iface)
		base := Claim{Kind: KindVM, Object: "VirtualMachineInstance " + vm, Guest: guest}
		if base.Segment, ok = segmentOf(ref); !ok {
			base.Object += notFound(ref)
		}
		for _, a := range iface.Addresses {
			c := base
			c.First, c.Last = a, a
			claims = append(claims, c)
		}
	}
	return ifaces, claims, partial, nil
}

// vmiAddr reads an address a VMI reports: plain, as KubeVirt writes it, or with a prefix length.
func vmiAddr(s string) (netip.Addr, bool) {
	if a, ok := parseAddr(s); ok {
		return a, true
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// usable reports whether an address can be someone's on a segment: link-local addresses
// (fe80::/10, 169.254.0.0/16) are every NIC's own, and loopback, multicast and unspecified
// addresses are nobody's.
func usable(a netip.Addr) bool {
	return !(a.IsLinkLocalUnicast() || a.IsLoopback() || a.IsMulticast() || a.IsUnspecified())
}

// interfaceName keeps the guest's name of a NIC when it is short, printable text.
func interfaceName(s string) string {
	if len(s) > maxInterfaceName || !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return ""
	}
	return s
}
