package rancher

import (
	"context"
	"fmt"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"github.com/rancher/wrangler/v2/pkg/crd"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// HarvesterConfigGVK is the machine-pool configuration of Rancher's Harvester node driver. Rancher
// builds this CRD at run time from the driver's fields, which sit at the object's root, so it has
// no Go type; the test CRD keeps every field.
var HarvesterConfigGVK = schema.GroupVersionKind{Group: "rke-machine-config.cattle.io", Version: "v1", Kind: "HarvesterConfig"}

// CRDs returns the Rancher CRDs the operator watches, built from the rancher/pkg/apis types
// the way Rancher builds them: the provisioning Cluster with a schema from its Go type, the
// management Cluster, Setting and the Harvester machine config keeping unknown fields.
func CRDs() ([]*apiextv1.CustomResourceDefinition, error) {
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
			// Rancher's settings keep value and default at the object's root.
			GVK:          mgmtv3.SchemeGroupVersion.WithKind("Setting"),
			PluralName:   "settings",
			NonNamespace: true,
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
		def, err := ToCRD(d)
		if err != nil {
			return nil, err
		}
		result = append(result, def)
	}
	return result, nil
}

// ToCRD builds the CRD wrangler describes as d, the way Rancher builds its own.
func ToCRD(d crd.CRD) (*apiextv1.CustomResourceDefinition, error) {
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

// PublishRancherAddress sets Rancher's internal-server-url setting to url, as Rancher does with
// the address it writes into every provisioning cluster's kubeconfig (rancher/rancher
// pkg/provisioningv2/kubeconfig reads settings.InternalServerURL), and returns how to put back
// what was there.
func PublishRancherAddress(cfg *rest.Config, url string) (restore func() error, err error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	settings := dyn.Resource(mgmtv3.SchemeGroupVersion.WithResource("settings"))
	const name = "internal-server-url"
	ctx := context.Background()
	old, err := settings.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		s := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": mgmtv3.SchemeGroupVersion.String(), "kind": "Setting",
			"metadata": map[string]interface{}{"name": name}, "value": url, "default": ""}}
		if _, err := settings.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating Rancher's %s setting: %w", name, err)
		}
		return func() error { return settings.Delete(ctx, name, metav1.DeleteOptions{}) }, nil
	case err != nil:
		return nil, err
	}
	previous, _, _ := unstructured.NestedString(old.Object, "value")
	set := func(value string) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s, err := settings.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.Object["value"] = value
			_, err = settings.Update(ctx, s, metav1.UpdateOptions{})
			return err
		})
	}
	if err := set(url); err != nil {
		return nil, fmt.Errorf("setting Rancher's %s: %w", name, err)
	}
	return func() error { return set(previous) }, nil
}
