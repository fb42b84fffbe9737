package harvester

import (
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The labels of a VM, kept as docker-machine-driver-harvester v1.0.6 (harvester/create.go) and
// Harvester's VM builder (pkg/builder/vm.go, at the commit the driver pins) write them.
const (
	LabelCreator        = "harvesterhci.io/creator"
	LabelVMName         = "harvesterhci.io/vmName"
	LabelMachineSetName = "harvesterhci.io/machineSetName"
	LabelGuestCluster   = "guestcluster.harvesterhci.io/name"
	LabelNodePool       = "nodepool.harvesterhci.io/name"
	// CreatorNodeDriver is the creator of a guest node's VM, which Harvester's own VMI controller
	// looks for (pkg/util/constants.go VirtualMachineCreatorNodeDriver).
	CreatorNodeDriver = "docker-machine-driver-harvester"
	// creatorUI is the creator of a VM made in Harvester's UI.
	creatorUI = "harvester"
)

// nodeDriverLabels are the labels the node driver gives the VM name in namespace of a node of
// Rancher provisioning cluster cluster. A machine is named <cluster>-<pool>-<x>-<y>: Rancher names
// the machine deployment <cluster>-<pool> (rancher/rancher v2.15.0
// pkg/controllers/provisioningv2/provisioningcluster/template.go) and Cluster API its machine sets
// and machines after it with a suffix each; Rancher passes the cluster's name as
// --harvester-cluster-name (pkg/controllers/capr/machineprovision/args.go). The driver takes the
// machine set to be the namespace and all of the name but its last two parts, and the pool to be
// the name less its last part and the cluster's name: the pool label keeps the machine set's
// suffix. The builder holds the VM's labels and its template's in one map, so that its name label
// (harvesterhci.io/vmName) is the VM's too, and every label the driver sets is the template's,
// and so the VMI's.
func nodeDriverLabels(namespace, name, cluster string) (map[string]string, error) {
	last := strings.LastIndex(name, "-")
	if last < 0 {
		// The driver would slice with -1 and panic: Rancher's machine names always have parts.
		return nil, fmt.Errorf("VM %s/%s of guest cluster %s: a machine name has dash-separated parts", namespace, name, cluster)
	}
	parts := append([]string{namespace}, strings.Split(name, "-")...)
	machineSet, err := formatLabelValue(strings.Join(parts[:len(parts)-2], "-"))
	if err != nil {
		return nil, err
	}
	pool := strings.TrimLeft(strings.TrimPrefix(name[:last], cluster), "-")
	return map[string]string{
		LabelCreator: CreatorNodeDriver, LabelVMName: name, LabelMachineSetName: machineSet,
		LabelGuestCluster: cluster, LabelNodePool: pool,
	}, nil
}

// formatLabelValue is the driver's (harvester/labels.go, after cluster-api): v when it is a valid
// label value, else a hash of it that is one.
func formatLabelValue(v string) (string, error) {
	if len(validation.IsValidLabelValue(v)) == 0 {
		return v, nil
	}
	hasher := fnv.New32a()
	if _, err := hasher.Write([]byte(v)); err != nil {
		return "", err
	}
	return fmt.Sprintf("hash_%s_z", base64.RawURLEncoding.EncodeToString(hasher.Sum(nil))), nil
}

// vmLabels are the labels of the VM and of its template. A guest node's VM has the node
// driver's, the same on both; a VM made in Harvester's UI has only its creator, and its template
// only the VM's name.
func vmLabels(vm VM) (onVM, onTemplate map[string]string, err error) {
	if vm.GuestCluster == "" {
		return map[string]string{LabelCreator: creatorUI}, map[string]string{LabelVMName: vm.Name}, nil
	}
	labels, err := nodeDriverLabels(vm.Namespace, vm.Name, vm.GuestCluster)
	if err != nil {
		return nil, nil, err
	}
	template := make(map[string]string, len(labels))
	for k, v := range labels {
		template[k] = v
	}
	return labels, template, nil
}
