// Package cachetrim holds the transforms the operator's informers apply to every object before
// caching it: a cache keeps only what some controller reads, so that the operator's memory follows
// the number of clusters, not the size of Rancher's objects. Each transform keeps every field the
// controllers read of its kind (see the tests, which ask the readers on a full and on a trimmed
// object), and drops the rest: managedFields everywhere, and the large parts of Rancher's objects.
//
// The fields kept of Rancher's clusters are also listed in architecture_test.go
// (TestNoCodeReadsATrimmedField), which fails when production code reads any other: reading one more
// field of a cached Rancher cluster means keeping it here and listing it there.
//
// A kind the operator writes back (FloatingIP, FloatingIPRange, ConfigMap) loses only its
// managedFields, which an update without them leaves as they are on the server; a kind it only
// reads may lose anything no controller reads.
package cachetrim

import (
	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kubefip/kube-fip-operator/pkg/harvester"
)

// LastAppliedAnnotation is where kubectl apply keeps the whole object as last applied.
const LastAppliedAnnotation = corev1.LastAppliedConfigAnnotation

// ManagedFieldsOnly is the transform of a kind the operator updates: it drops managedFields and
// nothing else. An update that omits managedFields keeps the server's, and every other field goes
// back as it was read.
func ManagedFieldsOnly(obj interface{}) (interface{}, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// readOnlyMeta drops what no reader of a read-only kind uses from its metadata: managedFields and
// kubectl's last-applied copy of the object.
func readOnlyMeta(m interface {
	SetManagedFields([]metav1.ManagedFieldsEntry)
	GetAnnotations() map[string]string
	SetAnnotations(map[string]string)
}) {
	m.SetManagedFields(nil)
	if a := m.GetAnnotations(); a != nil {
		if _, ok := a[LastAppliedAnnotation]; ok {
			delete(a, LastAppliedAnnotation)
			if len(a) == 0 {
				m.SetAnnotations(nil)
			}
		}
	}
}

// ProvisioningCluster keeps of a provisioning cluster its metadata, spec.cloudCredentialSecretName,
// of spec.rkeConfig the machine pools' name, controlPlaneRole, machineConfigRef and
// cloudCredentialSecretName and the address-family keys of machineGlobalConfig, and
// status.clusterName and status.clientSecretName: what discovery (harvester.ControlPlaneOf,
// harvester.StackOf), the FloatingIP controller and the guest passes read.
func ProvisioningCluster(obj interface{}) (interface{}, error) {
	c, ok := obj.(*provv1.Cluster)
	if !ok {
		return obj, nil
	}
	readOnlyMeta(c)
	out := &provv1.Cluster{TypeMeta: c.TypeMeta, ObjectMeta: c.ObjectMeta}
	out.Spec.CloudCredentialSecretName = c.Spec.CloudCredentialSecretName
	if rke := c.Spec.RKEConfig; rke != nil {
		kept := &provv1.RKEConfig{}
		for _, p := range rke.MachinePools {
			pool := provv1.RKEMachinePool{Name: p.Name, ControlPlaneRole: p.ControlPlaneRole, NodeConfig: p.NodeConfig}
			pool.CloudCredentialSecretName = p.CloudCredentialSecretName
			kept.MachinePools = append(kept.MachinePools, pool)
		}
		if data := rke.MachineGlobalConfig.Data; data != nil {
			kept.MachineGlobalConfig.Data = map[string]interface{}{}
			for _, k := range []string{harvester.ClusterCIDRKey, harvester.ServiceCIDRKey} {
				if v, ok := data[k]; ok {
					kept.MachineGlobalConfig.Data[k] = v
				}
			}
		}
		out.Spec.RKEConfig = kept
	}
	out.Status.ClusterName = c.Status.ClusterName
	out.Status.ClientSecretName = c.Status.ClientSecretName
	return out, nil
}

// ManagementCluster keeps of a management cluster its metadata, spec.displayName and, of its
// conditions, the type, status and reason of Connected and Ready: what discovery (the Harvester
// cluster's display name) and the guest passes (Rancher's view of the guest, its labels) read.
// Rancher's large parts — status.capabilities, allocatable, requested, appliedSpec, driver and
// agent image details — are dropped.
func ManagementCluster(obj interface{}) (interface{}, error) {
	c, ok := obj.(*mgmtv3.Cluster)
	if !ok {
		return obj, nil
	}
	readOnlyMeta(c)
	out := &mgmtv3.Cluster{TypeMeta: c.TypeMeta, ObjectMeta: c.ObjectMeta}
	out.Spec.DisplayName = c.Spec.DisplayName
	for _, cond := range c.Status.Conditions {
		if t := string(cond.Type); t == "Connected" || t == "Ready" {
			out.Status.Conditions = append(out.Status.Conditions, mgmtv3.ClusterCondition{Type: cond.Type, Status: cond.Status, Reason: cond.Reason})
		}
	}
	return out, nil
}

// Namespace keeps of a namespace its metadata but for annotations: discovery reads only whether
// it exists and is being deleted.
func Namespace(obj interface{}) (interface{}, error) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return obj, nil
	}
	out := &corev1.Namespace{TypeMeta: ns.TypeMeta, ObjectMeta: ns.ObjectMeta}
	out.ManagedFields, out.Annotations = nil, nil
	return out, nil
}

// HarvesterConfig keeps of a HarvesterConfig (the node driver's machine configuration, an
// unstructured object) apiVersion, kind, metadata, networkInfo and networkName: what
// harvester.NetworkOf reads. The VM's cloud-init user and network data go.
func HarvesterConfig(obj interface{}) (interface{}, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	readOnlyMeta(u)
	kept := map[string]interface{}{}
	for _, k := range []string{"apiVersion", "kind", "metadata", "networkInfo", "networkName"} {
		if v, ok := u.Object[k]; ok {
			kept[k] = v
		}
	}
	return &unstructured.Unstructured{Object: kept}, nil
}

var (
	_ cache.TransformFunc = ManagedFieldsOnly
	_ cache.TransformFunc = ProvisioningCluster
	_ cache.TransformFunc = ManagementCluster
	_ cache.TransformFunc = Namespace
	_ cache.TransformFunc = HarvesterConfig
)
