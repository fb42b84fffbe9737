package v1

import "strings"

// ProvisioningClusterOf reads f's AnnotationProvisioningCluster: ok only for namespace/name with
// both parts set.
func ProvisioningClusterOf(f *FloatingIP) (ClusterReference, bool) {
	if f == nil {
		return ClusterReference{}, false
	}
	namespace, name, found := strings.Cut(f.Annotations[AnnotationProvisioningCluster], "/")
	if !found || namespace == "" || name == "" || strings.Contains(name, "/") {
		return ClusterReference{}, false
	}
	return ClusterReference{Namespace: namespace, Name: name}, true
}
