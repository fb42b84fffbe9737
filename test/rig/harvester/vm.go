package harvester

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// What KubeVirt v1.7.0 and Harvester v1.8.2 put on VMs and VMIs (kubevirt.io/api core/v1
// types.go; harvester pkg/util/constants.go).
const (
	LabelNodeName            = "kubevirt.io/nodeName"
	AnnotationMACAddresses   = "harvesterhci.io/mac-address"
	annotationLatestObserved = "kubevirt.io/latest-observed-api-version"
	annotationStorageObserve = "kubevirt.io/storage-observed-api-version"
	finalizerVMController    = "kubevirt.io/virtualMachineControllerFinalize"
	finalizerVMIForeground   = "kubevirt.io/foregroundDeleteVirtualMachine"
	bindingBridge            = "bridge"
	bindingMasquerade        = "masquerade"
)

// VM is a Harvester virtual machine and the instance KubeVirt runs of it.
type VM struct {
	Namespace, Name string
	// GuestCluster is the Rancher provisioning cluster the VM is a node of, whose name the node
	// driver labels it with; empty for a VM of no guest cluster, made in Harvester's UI. A guest
	// node's VM is named as Rancher names machines, <cluster>-<pool>-<hash>-<suffix>.
	GuestCluster string
	// NICs are the VM's network interfaces, in order.
	NICs []NIC
	// Node is the Harvester node the VMI runs on, harvester-node-0 when empty.
	Node string
	// NoAgent is a guest without qemu-guest-agent: KubeVirt then knows its NICs from the domain
	// alone, with neither their names in the guest nor, but the pod network's, their addresses.
	NoAgent bool
	// GuestOnly are the guest's interfaces no VM network backs (a CNI's bridges and tunnels on an
	// RKE2 node): the agent reports them, without a VM network name.
	GuestOnly []GuestNIC
}

// NIC is a network interface of a VM and the VM network behind it, named alike (the node driver
// names them nic-0, nic-1 ...).
type NIC struct {
	Name string
	// Network is the VM network, "namespace/name" of a NAD; empty for the pod network.
	Network string
	// MAC is the interface's address; when empty, a locally administered one derived from the
	// VM's and the interface's names, as Harvester's VM webhook puts a random one in.
	MAC string
	// Model is the device model, virtio when empty.
	Model string
	// Binding is "bridge" or "masquerade"; when empty, bridge on a VM network and masquerade on
	// the pod network, as the node driver and Harvester's UI choose.
	Binding string
	// GuestName is the interface's name in the guest, as the agent reports it; enpNs0 (N its
	// place, from 1) when empty.
	GuestName string
	// Addresses are the interface's addresses in the guest as the agent reports them; for the pod
	// network, the pod's addresses, which KubeVirt reports with or without an agent.
	Addresses []string
}

// GuestNIC is an interface of the guest that only the agent reports.
type GuestNIC struct {
	GuestName, MAC string
	Addresses      []string
}

// CreateVM creates the VM vm and its running VMI as Harvester's node driver (or UI), Harvester's
// webhooks and controllers and KubeVirt's leave them: the VM with its labels, the MAC addresses
// of its interfaces (in its template and in the annotation Harvester's VMI network controller
// keeps) and its status through the status subresource; then the VMI of the template, owned by
// the VM, scheduled on vm.Node, and its status with a plain Update, as the VMI CRD has no status
// subresource. Both carry KubeVirt's finalizers, which DeleteVM takes off.
func (c *Cluster) CreateVM(ctx context.Context, vm VM) error {
	if err := c.ensureNamespace(ctx, vm.Namespace); err != nil {
		return err
	}
	if vm.Node == "" {
		vm.Node = "harvester-node-0"
	}
	onVM, onTemplate, err := vmLabels(vm)
	if err != nil {
		return err
	}
	nics := withDefaults(vm)
	macs := map[string]string{}
	for _, nic := range nics {
		macs[nic.Name] = nic.MAC
	}
	macJSON, err := json.Marshal(macs)
	if err != nil {
		return err
	}
	observed := map[string]string{annotationLatestObserved: "v1", annotationStorageObserve: "v1"}
	templateAnnotations := map[string]string{"harvesterhci.io/sshNames": "[]", "harvesterhci.io/waitForLeaseInterfaceNames": "[]"}
	spec := vmiSpec(nics)

	obj := newObject(VMResource, "VirtualMachine", vm.Namespace, vm.Name)
	obj.SetLabels(onVM)
	obj.SetAnnotations(merge(observed, map[string]string{AnnotationMACAddresses: string(macJSON)}))
	obj.SetFinalizers([]string{finalizerVMController})
	obj.Object["spec"] = map[string]interface{}{
		"runStrategy": "RerunOnFailure",
		"template": map[string]interface{}{
			"metadata": map[string]interface{}{"labels": stringMap(onTemplate), "annotations": stringMap(templateAnnotations)},
			"spec":     spec,
		},
	}
	created, err := c.resource(VMResource, vm.Namespace).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating VM %s/%s: %w", vm.Namespace, vm.Name, err)
	}
	now := stamp(metav1.Now())
	_, err = c.change(ctx, VMResource, vm.Namespace, vm.Name, true, func(u *unstructured.Unstructured) error {
		u.Object["status"] = map[string]interface{}{
			"created": true, "ready": true, "printableStatus": "Running",
			"conditions": []interface{}{condition("Ready", now)},
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing the status of VM %s/%s: %w", vm.Namespace, vm.Name, err)
	}

	vmi := newObject(VMIResource, "VirtualMachineInstance", vm.Namespace, vm.Name)
	vmi.SetLabels(merge(onTemplate, map[string]string{LabelNodeName: vm.Node}))
	vmiAnnotations := merge(templateAnnotations, observed)
	if vm.GuestCluster != "" {
		// Harvester's VMI controller copies the node's hostname label onto a guest node's VMI.
		vmiAnnotations["kubernetes.io/hostname"] = vm.Node
	}
	vmi.SetAnnotations(vmiAnnotations)
	vmi.SetFinalizers([]string{finalizerVMController, finalizerVMIForeground})
	vmi.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: VMResource.GroupVersion().String(), Kind: "VirtualMachine",
		Name: vm.Name, UID: created.GetUID(), Controller: ptr(true), BlockOwnerDeletion: ptr(true)}})
	vmi.Object["spec"] = runtime.DeepCopyJSON(spec)
	if _, err := c.resource(VMIResource, vm.Namespace).Create(ctx, vmi, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating VMI %s/%s: %w", vm.Namespace, vm.Name, err)
	}
	_, err = c.change(ctx, VMIResource, vm.Namespace, vm.Name, false, func(u *unstructured.Unstructured) error {
		conditions := []interface{}{condition("Ready", now)}
		if !vm.NoAgent {
			conditions = append(conditions, condition("AgentConnected", now))
		}
		u.Object["status"] = map[string]interface{}{
			"phase": "Running", "nodeName": vm.Node, "conditions": conditions,
			"interfaces": interfaceStatuses(vm, nics),
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing the status of VMI %s/%s: %w", vm.Namespace, vm.Name, err)
	}
	return nil
}

// DeleteVM deletes the VMI and the VM namespace/name, after taking off the finalizers that
// KubeVirt's controllers, which do not run here, would process; what is already gone is no error.
func (c *Cluster) DeleteVM(ctx context.Context, namespace, name string) error {
	if err := c.remove(ctx, VMIResource, namespace, name); err != nil {
		return err
	}
	return c.remove(ctx, VMResource, namespace, name)
}

// withDefaults is vm's NICs with the defaults their fields document filled in.
func withDefaults(vm VM) []NIC {
	nics := make([]NIC, len(vm.NICs))
	for i, nic := range vm.NICs {
		if nic.MAC == "" {
			nic.MAC = DefaultMAC(vm.Namespace, vm.Name, nic.Name)
		}
		if nic.Model == "" {
			nic.Model = "virtio"
		}
		if nic.Binding == "" {
			nic.Binding = bindingBridge
			if nic.Network == "" {
				nic.Binding = bindingMasquerade
			}
		}
		if nic.GuestName == "" {
			nic.GuestName = fmt.Sprintf("enp%ds0", i+1)
		}
		nics[i] = nic
	}
	return nics
}

// vmiSpec is the instance spec of a VM with nics, as Harvester's VM builder writes it: the
// interfaces and their networks, Multus networks named "namespace/name".
func vmiSpec(nics []NIC) map[string]interface{} {
	interfaces := make([]interface{}, 0, len(nics))
	networks := make([]interface{}, 0, len(nics))
	for _, nic := range nics {
		interfaces = append(interfaces, map[string]interface{}{
			"name": nic.Name, "model": nic.Model, "macAddress": nic.MAC, nic.Binding: map[string]interface{}{},
		})
		network := map[string]interface{}{"name": nic.Name, "pod": map[string]interface{}{}}
		if nic.Network != "" {
			network = map[string]interface{}{"name": nic.Name, "multus": map[string]interface{}{"networkName": nic.Network}}
		}
		networks = append(networks, network)
	}
	return map[string]interface{}{
		"domain": map[string]interface{}{
			"cpu":       map[string]interface{}{"cores": int64(2), "sockets": int64(1), "threads": int64(1)},
			"devices":   map[string]interface{}{"interfaces": interfaces},
			"resources": map[string]interface{}{"limits": map[string]interface{}{"cpu": "2", "memory": "4Gi"}},
		},
		"networks":         networks,
		"evictionStrategy": "LiveMigrateIfPossible",
	}
}

// condition is a KubeVirt condition of kind, True since at.
func condition(kind, at string) interface{} {
	return map[string]interface{}{"type": kind, "status": "True", "lastProbeTime": nil, "lastTransitionTime": at}
}

// merge is a new map of the entries of maps, later ones winning.
func merge(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }
