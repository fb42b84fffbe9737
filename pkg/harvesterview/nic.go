package harvesterview

import (
	"fmt"
	"slices"
	"strings"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
	"github.com/kubefip/kube-fip-operator/pkg/segments"
)

// NIC is the network interface a guest's control-plane nodes have on a range's network, as their
// VMs report it: the one kube-vip must announce the guest's address on.
type NIC struct {
	// Name is the guest OS's name of the NIC; "" when no node's guest agent tells it.
	Name string
	// Nodes are the VMs it was read from, "namespace/name".
	Nodes []string
}

// NICOf finds the NIC the control-plane nodes of guest (the VMs labelled with its name whose
// names start with prefix, Rancher's "<cluster>-<pool>-") have on network ("namespace/name") in
// view. A guest none of whose VMs the view shows gives no NIC and no problem: nothing is known.
// Nodes without a NIC on the network, or naming it differently, are a problem that names them.
// A node whose guest agent does not report the name counts for none: the others decide.
func NICOf(view *segments.View, guest, prefix, network string) (NIC, *problem.Problem) {
	if view == nil || guest == "" {
		return NIC{}, nil
	}
	names := map[string]string{} // node → NIC name on the network ("" unknown)
	onNetwork := map[string]bool{}
	for _, i := range view.InterfacesOf(guest) {
		if _, vm, _ := strings.Cut(i.VM, "/"); !strings.HasPrefix(vm, prefix) {
			continue
		}
		if _, seen := names[i.VM]; !seen {
			names[i.VM] = ""
		}
		if i.Network == network {
			onNetwork[i.VM] = true
			if i.InterfaceName != "" {
				names[i.VM] = i.InterfaceName
			}
		}
	}
	nodes := make([]string, 0, len(names))
	for vm := range names {
		nodes = append(nodes, vm)
	}
	slices.Sort(nodes)
	var without []string
	byName := map[string][]string{}
	for _, vm := range nodes {
		switch {
		case !onNetwork[vm]:
			without = append(without, vm)
		case names[vm] != "":
			byName[names[vm]] = append(byName[names[vm]], vm)
		}
	}
	if len(without) > 0 {
		return NIC{Nodes: nodes}, problem.New(v1.ReasonNoInterfaceOnNetwork,
			"control-plane nodes %s of guest cluster %s have no NIC on network %s, where the range's address is used: kube-vip cannot announce it there",
			redact.Names(without, maxNamed), redact.Quote(guest, redact.MaxValue), network)
	}
	if len(byName) > 1 {
		var each []string
		for name, vms := range byName {
			each = append(each, fmt.Sprintf("%s on %s", redact.Quote(name, redact.MaxValue), strings.Join(vms, ", ")))
		}
		slices.Sort(each)
		return NIC{Nodes: nodes}, problem.New(v1.ReasonInterfaceNamesDiffer,
			"the control-plane nodes of guest cluster %s name their NIC on network %s differently (%s), and kube-vip takes one name for every node: give the nodes one image, or set env.vip_interface in kubevipChartValues",
			redact.Quote(guest, redact.MaxValue), network, redact.Names(each, maxNamed))
	}
	for name := range byName {
		return NIC{Name: name, Nodes: nodes}, nil
	}
	return NIC{Nodes: nodes}, nil
}
