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
// A kind the operator writes back (FloatingIP, FloatingIPRange), or reads whole (its ConfigMap),
// loses only its managedFields, which an update without them leaves as they are on the server; a
// kind it only reads may lose anything no controller reads: of its metadata only the identity, the
// timestamps and the labels stay (ReadOnlyMetadata).
//
// Every transform also shares the strings that repeat from object to object (label and annotation
// keys, apiVersion and kind, namespaces, finalizers, condition types and reasons): a decoded object
// brings its own copy of each, and a thousand FloatingIPs would keep a thousand copies of every key.
package cachetrim

import (
	"unique"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
)

// LastAppliedAnnotation is where kubectl apply keeps the whole object as last applied.
const LastAppliedAnnotation = corev1.LastAppliedConfigAnnotation

// ManagedFieldsOnly is the transform of a kind the operator updates: it drops managedFields and
// nothing else. An update that omits managedFields keeps the server's, and every other field goes
// back as it was read (its repeating strings shared, see share).
func ManagedFieldsOnly(obj interface{}) (interface{}, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
		m.SetNamespace(share(m.GetNamespace()))
		m.SetLabels(shareMap(m.GetLabels(), true))
		m.SetAnnotations(shareMap(m.GetAnnotations(), false))
		m.SetFinalizers(shareAll(m.GetFinalizers()))
		refs := m.GetOwnerReferences()
		for i := range refs {
			refs[i].APIVersion, refs[i].Kind = share(refs[i].APIVersion), share(refs[i].Kind)
		}
	}
	if o, ok := obj.(runtime.Object); ok {
		if t, ok := o.GetObjectKind().(*metav1.TypeMeta); ok {
			*t = sharedType(*t)
		}
	}
	if f, ok := obj.(*v1.FloatingIP); ok {
		for i := range f.Status.Conditions {
			c := &f.Status.Conditions[i]
			c.Type, c.Status, c.Reason = share(c.Type), corev1.ConditionStatus(share(string(c.Status))), share(c.Reason)
		}
		f.Status.Range = share(f.Status.Range)
	}
	return obj, nil
}

// ReadOnlyMetadata names, separated by spaces, the fields a kind the operator only reads keeps of
// its metadata (readOnlyMeta); the rest (annotations, finalizers, owner references, managedFields)
// is dropped. No controller reads anything else of these kinds' metadata, nor writes them back
// (see architecture_test.go).
const ReadOnlyMetadata = "Name Namespace UID ResourceVersion Generation CreationTimestamp DeletionTimestamp Labels"

// readOnlyMeta is the metadata a kind the operator only reads keeps: ReadOnlyMetadata.
func readOnlyMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: share(m.Namespace), UID: m.UID, ResourceVersion: m.ResourceVersion, Generation: m.Generation,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp, Labels: shareMap(m.Labels, true),
	}
}

// sharedType is t with its strings shared.
func sharedType(t metav1.TypeMeta) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: share(t.APIVersion), Kind: share(t.Kind)}
}

// share returns the one copy of s that the objects cached since the last garbage collection use:
// unique's table forgets a string once no Handle holds it, so an object cached after a collection
// may hold a copy of its own.
func share(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// shareAll shares every string of list, in place.
func shareAll(list []string) []string {
	for i, s := range list {
		list[i] = share(s)
	}
	return list
}

// shareMap returns m with its keys shared and, with values, its values: the values of labels
// repeat (a team, a role), those of annotations are mostly one object's own.
func shareMap(m map[string]string, values bool) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if values {
			v = share(v)
		}
		out[share(k)] = v
	}
	return out
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
	out := &provv1.Cluster{TypeMeta: sharedType(c.TypeMeta), ObjectMeta: readOnlyMeta(c.ObjectMeta)}
	out.Spec.CloudCredentialSecretName = share(c.Spec.CloudCredentialSecretName)
	if rke := c.Spec.RKEConfig; rke != nil {
		kept := &provv1.RKEConfig{}
		for _, p := range rke.MachinePools {
			pool := provv1.RKEMachinePool{Name: share(p.Name), ControlPlaneRole: p.ControlPlaneRole}
			if ref := p.NodeConfig; ref != nil {
				pool.NodeConfig = &corev1.ObjectReference{Kind: share(ref.Kind), Namespace: share(ref.Namespace), Name: ref.Name,
					APIVersion: share(ref.APIVersion), UID: ref.UID, ResourceVersion: ref.ResourceVersion, FieldPath: ref.FieldPath}
			}
			pool.CloudCredentialSecretName = share(p.CloudCredentialSecretName)
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
	out := &mgmtv3.Cluster{TypeMeta: sharedType(c.TypeMeta), ObjectMeta: readOnlyMeta(c.ObjectMeta)}
	out.Spec.DisplayName = c.Spec.DisplayName
	for _, cond := range c.Status.Conditions {
		if t := string(cond.Type); t == "Connected" || t == "Ready" {
			out.Status.Conditions = append(out.Status.Conditions, mgmtv3.ClusterCondition{
				Type: mgmtv3.ClusterConditionType(share(t)), Status: corev1.ConditionStatus(share(string(cond.Status))), Reason: share(cond.Reason)})
		}
	}
	return out, nil
}

// Namespace keeps of a namespace its metadata (ReadOnlyMetadata): discovery reads only whether it
// exists and is being deleted.
func Namespace(obj interface{}) (interface{}, error) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return obj, nil
	}
	return &corev1.Namespace{TypeMeta: sharedType(ns.TypeMeta), ObjectMeta: readOnlyMeta(ns.ObjectMeta)}, nil
}

// HarvesterConfig keeps of a HarvesterConfig (the node driver's machine configuration, an
// unstructured object) apiVersion, kind, metadata (ReadOnlyMetadata), networkInfo and networkName:
// what harvester.NetworkOf reads. The VM's cloud-init user and network data go.
func HarvesterConfig(obj interface{}) (interface{}, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	kept := map[string]interface{}{}
	for _, k := range []string{"networkInfo", "networkName"} {
		if v, ok := u.Object[k]; ok {
			kept[k] = v
		}
	}
	out := &unstructured.Unstructured{Object: kept}
	out.SetAPIVersion(share(u.GetAPIVersion()))
	out.SetKind(share(u.GetKind()))
	// The getters read a malformed field as empty, so that an odd object is cached, not refused.
	m := readOnlyMeta(metav1.ObjectMeta{
		Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
		Generation: u.GetGeneration(), CreationTimestamp: u.GetCreationTimestamp(), DeletionTimestamp: u.GetDeletionTimestamp(),
		Labels: u.GetLabels(),
	})
	out.SetName(m.Name)
	out.SetNamespace(m.Namespace)
	out.SetUID(m.UID)
	out.SetResourceVersion(m.ResourceVersion)
	out.SetGeneration(m.Generation)
	out.SetCreationTimestamp(m.CreationTimestamp)
	out.SetDeletionTimestamp(m.DeletionTimestamp)
	out.SetLabels(m.Labels)
	return out, nil
}
