package testenv

import (
	"fmt"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"github.com/rancher/wrangler/v2/pkg/crd"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// HarvesterConfigGVK is the machine-pool configuration of Rancher's Harvester node driver. Rancher
// builds this CRD at run time from the driver's fields, which sit at the object's root, so it has
// no Go type; the test CRD keeps every field.
var HarvesterConfigGVK = schema.GroupVersionKind{Group: "rke-machine-config.cattle.io", Version: "v1", Kind: "HarvesterConfig"}

// RancherCRDs returns the Rancher CRDs the operator watches, built from the rancher/pkg/apis types
// the way Rancher builds them: the provisioning Cluster with a schema from its Go type, the
// management Cluster and the Harvester machine config keeping unknown fields.
func RancherCRDs() ([]*apiextv1.CustomResourceDefinition, error) {
	preserve := &apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: boolPtr(true)}
	defs := []crd.CRD{
		crd.CRD{
			GVK:        provv1.SchemeGroupVersion.WithKind("Cluster"),
			PluralName: "clusters",
			Status:     true,
		}.WithSchemaFromStruct(provv1.Cluster{}),
		{
			GVK:          mgmtv3.SchemeGroupVersion.WithKind("Cluster"),
			PluralName:   "clusters",
			NonNamespace: true,
			Status:       true,
			Schema:       preserve,
		},
		{
			GVK:          HarvesterConfigGVK,
			PluralName:   "harvesterconfigs",
			SingularName: "harvesterconfig",
			Schema:       preserve,
		},
	}
	var result []*apiextv1.CustomResourceDefinition
	for _, d := range defs {
		def, err := toCRD(d)
		if err != nil {
			return nil, err
		}
		result = append(result, def)
	}
	return result, nil
}

func toCRD(d crd.CRD) (*apiextv1.CustomResourceDefinition, error) {
	obj, err := d.ToCustomResourceDefinition()
	if err != nil {
		return nil, fmt.Errorf("building CRD for %s: %w", d.GVK, err)
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("building CRD for %s: unexpected %T", d.GVK, obj)
	}
	def := &apiextv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, def); err != nil {
		return nil, fmt.Errorf("building CRD for %s: %w", d.GVK, err)
	}
	return def, nil
}

func boolPtr(b bool) *bool { return &b }
