package approve

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// Kind is one kind either chart may render, as a REST client maps it to its API resource.
type Kind struct {
	schema.GroupVersionKind
	// Resource is the kind's API resource (plural, lower case).
	Resource      string
	ClusterScoped bool
	// charts are those whose pinned upstream chart creates objects of the kind.
	charts []guestchart.Chart
	// typed is the kind's typed form, into which a rendered document is decoded.
	typed func() runtime.Object
}

// Kinds are the only kinds either chart renders; anything else is refused. They are all Helm needs
// mapped to apply an approved manifest, so that nothing of a guest's API discovery is read.
func Kinds() []Kind {
	both, kubevip, provider := guestchart.Charts(), []guestchart.Chart{guestchart.Kubevip}, []guestchart.Chart{guestchart.CloudProvider}
	core, rbac, apps := corev1.SchemeGroupVersion, rbacv1.SchemeGroupVersion, appsv1.SchemeGroupVersion
	return []Kind{
		{core.WithKind("ServiceAccount"), "serviceaccounts", false, both, func() runtime.Object { return &corev1.ServiceAccount{} }},
		{rbac.WithKind("ClusterRole"), "clusterroles", true, both, func() runtime.Object { return &rbacv1.ClusterRole{} }},
		{rbac.WithKind("ClusterRoleBinding"), "clusterrolebindings", true, both, func() runtime.Object { return &rbacv1.ClusterRoleBinding{} }},
		{rbac.WithKind("Role"), "roles", false, kubevip, func() runtime.Object { return &rbacv1.Role{} }},
		{rbac.WithKind("RoleBinding"), "rolebindings", false, kubevip, func() runtime.Object { return &rbacv1.RoleBinding{} }},
		{apps.WithKind("DaemonSet"), "daemonsets", false, kubevip, func() runtime.Object { return &appsv1.DaemonSet{} }},
		{apps.WithKind("Deployment"), "deployments", false, provider, func() runtime.Object { return &appsv1.Deployment{} }},
		{podMonitorGVK, "podmonitors", false, kubevip, func() runtime.Object { return &podMonitor{} }},
	}
}

// kindOf is the Kind of gvk, if either chart renders it.
func kindOf(gvk schema.GroupVersionKind) (Kind, bool) {
	for _, k := range Kinds() {
		if k.GroupVersionKind == gvk {
			return k, true
		}
	}
	return Kind{}, false
}

// createdBy reports whether the pinned upstream chart creates objects of the kind.
func (k Kind) createdBy(chart guestchart.Chart) bool { return slices.Contains(k.charts, chart) }

// ObjectRef names an object in the guest as its API path does.
type ObjectRef struct {
	Group     string
	Version   string
	Resource  string
	Namespace string
	Name      string
}

func (r ObjectRef) String() string {
	res := r.Resource
	if r.Group != "" {
		res += "." + r.Group
	}
	if r.Namespace == "" {
		return res + " " + r.Name
	}
	return res + " " + r.Namespace + "/" + r.Name
}

func (k Kind) ref(namespace, name string) ObjectRef {
	if k.ClusterScoped {
		namespace = ""
	}
	return ObjectRef{Group: k.Group, Version: k.Version, Resource: k.Resource, Namespace: namespace, Name: name}
}

// Owned is every object a release of chart the operator installed may own in namespace of a
// guest: each of the chart's kinds under the name the product gives its objects. It is what an
// upgrade may delete when it renders one no more, and what an uninstall may delete.
func Owned(chart guestchart.Chart, namespace string) []ObjectRef {
	name := ownedName(chart)
	var out []ObjectRef
	for _, k := range Kinds() {
		if k.createdBy(chart) {
			out = append(out, k.ref(namespace, name))
		}
	}
	return out
}

// ownedName is the name the product gives every object of chart's release.
func ownedName(chart guestchart.Chart) string {
	if chart == guestchart.Kubevip {
		return chartvalues.KubevipNameOverride
	}
	return chartvalues.ObjectName(chart, "")
}
