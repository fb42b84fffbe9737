package backup

import (
	"fmt"

	"github.com/rancher/wrangler/v2/pkg/crd"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
)

// Rancher Backups (the rancher-backup chart, rancher/backup-restore-operator) backs up what a
// ResourceSet selects. The types, the collector (backupcollect.go) and the restore
// (backuprestore.go) in this package are stand-ins for that contract as
// rancher/backup-restore-operator v10.0.8 (rancher-backup for Rancher 2.14) has it; the fields and
// the selection and restore rules used here are unchanged since v4.0.4 (Rancher 2.8), the oldest
// Rancher the operator chart admits, except fieldSelectors, which v4 lacks.

// ResourceSetGVK is rancher-backup's ResourceSet: cluster-scoped, with its fields at the object's
// root (no spec).
var ResourceSetGVK = schema.GroupVersionKind{Group: "resources.cattle.io", Version: "v1", Kind: "ResourceSet"}

// ResourceSetAPIVersion is the ResourceSet's API as Helm's capabilities name it.
const ResourceSetAPIVersion = "resources.cattle.io/v1/ResourceSet"

// ResourceSet mirrors resources.cattle.io/v1 ResourceSet.
type ResourceSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// ResourceSelectors say what a backup collects; an object matched by any selector is backed up.
	ResourceSelectors []ResourceSelector `json:"resourceSelectors" wrangler:"required"`
	// ControllerReferences are the workloads a restore scales to 0 replicas while it writes, and
	// back afterwards.
	ControllerReferences []ControllerReference `json:"controllerReferences,omitempty"`
}

// ResourceSelector mirrors one entry of resourceSelectors. Within a dimension the list and the
// regular expression are OR'd (kinds/kindsRegexp, resourceNames/resourceNameRegexp,
// namespaces/namespaceRegexp); the dimensions are AND'd.
type ResourceSelector struct {
	// APIVersion is the one group/version the selector looks in, e.g. "kubefip.k8s.binbash.org/v1".
	APIVersion string `json:"apiVersion" wrangler:"required"`
	// Kinds and KindsRegexp match a resource's Kind or its plural name from discovery; "." is
	// every resource of the group/version.
	Kinds       []string `json:"kinds,omitempty"`
	KindsRegexp string   `json:"kindsRegexp,omitempty"`
	// ResourceNames and ResourceNameRegexp match an object's name; none set is every name.
	ResourceNames      []string `json:"resourceNames,omitempty"`
	ResourceNameRegexp string   `json:"resourceNameRegexp,omitempty"`
	// Namespaces and NamespaceRegexp limit namespaced resources; none set is every namespace.
	Namespaces      []string `json:"namespaces,omitempty"`
	NamespaceRegexp string   `json:"namespaceRegexp,omitempty"`
	// LabelSelectors and FieldSelectors are passed to the API server's list call.
	LabelSelectors *metav1.LabelSelector `json:"labelSelectors,omitempty"`
	FieldSelectors map[string]string     `json:"fieldSelectors,omitempty"`
	// ExcludeKinds and ExcludeResourceNameRegexp take matches out again.
	ExcludeKinds              []string `json:"excludeKinds,omitempty"`
	ExcludeResourceNameRegexp string   `json:"excludeResourceNameRegexp,omitempty"`
}

// ControllerReference mirrors one entry of controllerReferences.
type ControllerReference struct {
	APIVersion string `json:"apiVersion" wrangler:"required"`
	Resource   string `json:"resource" wrangler:"required"`
	Namespace  string `json:"namespace" wrangler:"required"`
	Name       string `json:"name" wrangler:"required"`
	// Replicas is written by a restore: the count it scales back to.
	Replicas int32 `json:"replicas,omitempty"`
}

// ResourceSetCRD returns the stand-in of rancher-backup-crd's ResourceSet CRD, its schema built
// from the mirror type above, so the API server rejects (with strict field validation) a
// ResourceSet field rancher-backup does not know.
func ResourceSetCRD() (*apiextv1.CustomResourceDefinition, error) {
	return rancher.ToCRD(crd.CRD{
		GVK:          ResourceSetGVK,
		PluralName:   "resourcesets",
		SingularName: "resourceset",
		NonNamespace: true,
		Status:       true,
	}.WithSchemaFromStruct(ResourceSet{}))
}

// InstallResourceSetCRD installs the ResourceSet CRD into the API server of cfg, as installing
// the rancher-backup-crd chart does, and waits until the API is served. Installing it again is
// harmless.
func InstallResourceSetCRD(cfg *rest.Config) error {
	def, err := ResourceSetCRD()
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextv1.CustomResourceDefinition{def}}); err != nil {
		return fmt.Errorf("installing the ResourceSet CRD: %w", err)
	}
	return nil
}
