package guest

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SettingResource is Rancher's settings.management.cattle.io (management.cattle.io/v3 Setting,
// cluster-scoped; its value and default sit at the object's root).
func SettingResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "management.cattle.io", Version: "v3", Resource: "settings"}
}

// SettingsGetter reads one Setting by name: a dynamic client of SettingResource, whose RBAC grants
// get on the two address settings and nothing else.
type SettingsGetter interface {
	Get(ctx context.Context, name string, options metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error)
}

// RancherAddresses reads Rancher's own addresses, the values of its internal-server-url and
// server-url settings, as Rancher reads a setting: its value, else its default. A setting that
// does not exist or is empty adds nothing. Every guest kubeconfig's server must be the cluster
// proxy URL on one of them (CheckKubeconfig).
func RancherAddresses(ctx context.Context, settings SettingsGetter) ([]string, error) {
	var out []string
	for _, name := range []string{SettingInternalServerURL, SettingServerURL} {
		s, err := settings.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("reading Rancher's %s setting: %w", name, err)
		}
		value, _, _ := unstructured.NestedString(s.Object, "value")
		if strings.TrimSpace(value) == "" {
			value, _, _ = unstructured.NestedString(s.Object, "default")
		}
		if value = strings.TrimSpace(value); value != "" {
			out = append(out, value)
		}
	}
	return out, nil
}
