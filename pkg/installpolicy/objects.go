package installpolicy

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

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

// resources are the API resources of the kinds either chart renders.
func resources() map[string]string {
	return map[string]string{
		"ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
		"Role": "roles", "RoleBinding": "rolebindings", "DaemonSet": "daemonsets", "Deployment": "deployments",
		"PodMonitor": "podmonitors",
	}
}

func refOf(gvk schema.GroupVersionKind, namespace, name string) ObjectRef {
	if clusterScoped(gvk.Kind) {
		namespace = ""
	}
	return ObjectRef{Group: gvk.Group, Version: gvk.Version, Resource: resources()[gvk.Kind], Namespace: namespace, Name: name}
}

// owned is every object the chart may own in the guest: each of its kinds under the plan's name.
func (pl *Plan) owned(namespace string) []ObjectRef {
	return Owned(pl.Chart, namespace)
}

// Owned is every object a release of chart the operator installed may own in namespace of a
// guest: each of the chart's kinds under the name the product gives its objects. It is what an
// upgrade may delete when it renders one no more, and what an uninstall may delete.
func Owned(chart Chart, namespace string) []ObjectRef {
	name := objectName(chart, "")
	if chart == Kubevip {
		name = KubevipNameOverride
	}
	var out []ObjectRef
	for gvk := range kinds() {
		j := judge{chart: chart}
		if !j.creates(gvk.Kind) {
			continue
		}
		out = append(out, refOf(gvk, namespace, name))
	}
	return out
}
