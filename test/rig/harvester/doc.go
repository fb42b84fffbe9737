// Package harvester stands in for a Harvester cluster as Rancher reaches it, for the integration
// tests: an extra real API server (controlplane.Environment.StartGuest) serving the CRDs the
// upstream projects ship (crds/, copied with their source named in each file and in
// crds/README.md), holding objects shaped as the upstream controllers and webhooks leave them, and
// registered with the test cluster proxy and Rancher's objects (Register). A test that finds
// something through these objects proves it against what a Harvester cluster really holds only if
// nothing is pruned or reshaped on the way: the CRDs keep every field upstream keeps.
//
// The versions mirrored are those of Harvester v1.8.2: network-controller-harvester and
// load-balancer-harvester v1.8.2, the vm-dhcp-controller add-on v1.8.1, KubeVirt v1.7.0 (the
// kubevirt.io/api every Harvester v1.8.2 module requires), docker-machine-driver-harvester v1.0.6
// and Rancher v2.15.0.
//
// What the objects carry, and where it comes from:
//
//   - Which VM is a guest cluster's node: the node driver labels the VirtualMachine with
//     guestcluster.harvesterhci.io/name (the Rancher provisioning cluster's name, which Rancher
//     passes as --harvester-cluster-name), nodepool.harvesterhci.io/name and
//     harvesterhci.io/machineSetName. KubeVirt does not copy a VM's labels to its VMI: it gives
//     the VMI its template's labels (v1.7.0 pkg/virt-controller/watch/vm/vm.go SetupVMIFromVM).
//     But Harvester's VM builder, which the driver uses, holds the VM's labels and its template's
//     in one map (pkg/builder/vm.go NewVMBuilder, at the harvester commit c537e12b7f09 the driver
//     pins, unchanged in v1.8.2): every label the driver sets is the template's too, and so the
//     VMI's, and the template's harvesterhci.io/vmName is the VM's too. Harvester's own VMI
//     controller counts on it, reading harvesterhci.io/creator=docker-machine-driver-harvester
//     from the VMI. The pool label keeps the machine set's suffix (the driver trims only the last
//     part of the machine name).
//   - A VMI's addresses: status.interfaces as virt-handler and virt-controller write them. With
//     qemu-guest-agent, an interface's entry carries the guest's name for it (interfaceName) and
//     its addresses; infoSource is "domain, guest-agent", and for a Multus network
//     "domain, guest-agent, multus-status" once virt-controller has read the launcher pod's
//     network-status annotation. Without an agent, a Multus interface has neither name nor
//     addresses. The guest's other interfaces (a CNI's on an RKE2 node) follow with infoSource
//     "guest-agent" and no VM network name; lo is left out. The pod network's entry comes first
//     and holds the pod's addresses, agent or not.
//   - MAC addresses: Harvester's VM webhook gives each interface without one a random locally
//     administered address, and its VMI network controller records them in the VM's
//     harvesterhci.io/mac-address annotation; here they are derived from the names instead, so
//     that runs repeat.
//   - Status writes: the load balancer's IPPool and KubeVirt's VMI have no status subresource,
//     so their status is written with a plain Update, as upstream; the DHCP IPPool and the VM
//     have one.
//
// Left out: the webhooks' refusals (overlapping pools, a second global pool, deleting a pool in
// use), which the writers do not check, so that a test can also build what Harvester would
// refuse; and anything no test of the operator reads (disks, volumes, the agent pod of a DHCP
// pool).
package harvester
