package installpolicy

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// judge holds what one approval judges every rendered object against: the chart, the release,
// and the name the values give the chart's objects.
type judge struct {
	policy    Policy
	chart     Chart
	release   string
	namespace string
	// name is what the chart names every object (values' nameOverride, or the chart's name).
	name string
	// decisions are what the kube-vip environment judge made of each kube-vip container.
	decisions []Decision
}

// deny is a refusal of one rendered object.
func (j *judge) deny(o *object, format string, args ...interface{}) error {
	return refuse(ReasonRenderRefused, "", "the %s chart rendered %s %s: %s", j.chart, o.gvk.Kind, displayName(o), fmt.Sprintf(format, args...))
}

func displayName(o *object) string {
	if ns := o.meta.GetNamespace(); ns != "" {
		return ns + "/" + o.meta.GetName()
	}
	return o.meta.GetName()
}

// clusterScoped are the kinds without a namespace.
func clusterScoped(kind string) bool { return kind == "ClusterRole" || kind == "ClusterRoleBinding" }

// object judges one rendered object by its kind's allow-list, and fills in the namespace Helm
// would give it.
func (j *judge) object(o *object) error {
	if err := j.metadata(o); err != nil {
		return err
	}
	switch obj := o.obj.(type) {
	case *corev1.ServiceAccount:
		if f := setFields(obj, "apiVersion", "kind", "metadata"); len(f) > 0 {
			return j.deny(o, "%s: the chart's ServiceAccount sets nothing but its metadata", strings.Join(f, ", "))
		}
	case *rbacv1.ClusterRole:
		if f := setFields(obj, "apiVersion", "kind", "metadata", "rules"); len(f) > 0 {
			return j.deny(o, "%s is not a field the chart's ClusterRole sets", strings.Join(f, ", "))
		}
		return j.rules(o, "ClusterRole", obj.Rules)
	case *rbacv1.Role:
		if f := setFields(obj, "apiVersion", "kind", "metadata", "rules"); len(f) > 0 {
			return j.deny(o, "%s is not a field the chart's Role sets", strings.Join(f, ", "))
		}
		return j.rules(o, "Role", obj.Rules)
	case *rbacv1.ClusterRoleBinding:
		return j.binding(o, "ClusterRole", obj.RoleRef, obj.Subjects)
	case *rbacv1.RoleBinding:
		return j.binding(o, "Role", obj.RoleRef, obj.Subjects)
	case *podMonitor:
		return j.podMonitor(o, obj)
	default:
		return j.workload(o)
	}
	return nil
}

// creates reports whether the pinned upstream chart creates objects of kind.
func (j *judge) creates(kind string) bool {
	switch kind {
	case "ServiceAccount", "ClusterRole", "ClusterRoleBinding":
		return true
	case "DaemonSet", "PodMonitor", "Role", "RoleBinding":
		return j.chart == Kubevip
	case "Deployment":
		return j.chart == CloudProvider
	}
	return false
}

// metadata allows a name, the release's namespace, labels and, on the kube-vip ClusterRole, the
// annotation RBAC's reconciler reads; nothing else (no finalizers, owners, or hook annotations).
func (j *judge) metadata(o *object) error {
	m := o.meta
	if !j.creates(o.gvk.Kind) {
		return j.deny(o, "the %s chart creates no %s", j.chart, o.gvk.Kind)
	}
	if m.GetName() != j.name {
		return j.deny(o, "its name is not %s, the name the chart gives its objects", j.name)
	}
	switch {
	case clusterScoped(o.gvk.Kind) && m.GetNamespace() != "":
		return j.deny(o, "a %s has no namespace", o.gvk.Kind)
	case !clusterScoped(o.gvk.Kind) && m.GetNamespace() != "" && m.GetNamespace() != j.namespace:
		return j.deny(o, "namespace %s is not the release's, %s", shorten(m.GetNamespace()), j.namespace)
	case !clusterScoped(o.gvk.Kind):
		m.SetNamespace(j.namespace)
	}
	meta := o.obj.(interface{ GetObjectMeta() metav1.Object })
	if om, ok := meta.GetObjectMeta().(*metav1.ObjectMeta); ok {
		if f := setFields(om, "name", "namespace", "labels", "annotations"); len(f) > 0 {
			return j.deny(o, "metadata.%s is not set by the chart", strings.Join(f, ", metadata."))
		}
	}
	if err := labelsProblem("metadata.labels", m.GetLabels()); err != nil {
		return j.deny(o, "%v", err)
	}
	for k := range m.GetLabels() {
		if !objectLabelKeys()[k] {
			return j.deny(o, "label %q is not one the charts set on their objects: labels have meaning elsewhere (RBAC aggregation, Service selectors, policies)", shorten(k))
		}
	}
	for k, v := range m.GetAnnotations() {
		if o.gvk.Kind == "ClusterRole" && k == rbacv1.AutoUpdateAnnotationKey && v == "true" {
			continue
		}
		return j.deny(o, "annotation %q is not one the chart sets", shorten(k))
	}
	return nil
}

// objectLabelKeys are the labels the charts put on their objects: Helm's and Kubernetes'
// recommended ones, which nothing in a cluster acts on. Any other key may (a ClusterRole labelled
// rbac.authorization.k8s.io/aggregate-to-admin lends its rules to every namespace admin).
func objectLabelKeys() map[string]bool {
	return map[string]bool{
		"app.kubernetes.io/name": true, "app.kubernetes.io/instance": true, "app.kubernetes.io/version": true,
		"app.kubernetes.io/managed-by": true, "app.kubernetes.io/component": true, "app.kubernetes.io/part-of": true,
		"helm.sh/chart": true,
	}
}

// rules allows only the permissions the pinned upstream chart grants: each API group, resource
// and verb a rule names must be one of them. A resourceNames list narrows a rule and stays
// allowed; URLs and wildcards the chart does not use are refused.
func (j *judge) rules(o *object, kind string, rules []rbacv1.PolicyRule) error {
	allowed := pinnedRules(j.chart, kind)
	for i, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			return j.deny(o, "rules[%d] grants URLs, which the chart does not", i)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, verb := range r.Verbs {
					if !allowed[g+"/"+res+":"+verb] {
						return j.deny(o, "rules[%d] grants %s on %s, which the upstream %s chart does not", i, shorten(verb), groupResource(g, res), j.chart)
					}
				}
			}
		}
	}
	return nil
}

func groupResource(group, resource string) string {
	if group == "" {
		return shorten(resource)
	}
	return shorten(resource + "." + group)
}

// binding allows only the binding of the release's own role, by its name, to the release's own
// ServiceAccount.
func (j *judge) binding(o *object, roleKind string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) error {
	if ref.APIGroup != rbacv1.GroupName || ref.Kind != roleKind || ref.Name != j.name {
		return j.deny(o, "roleRef %s %s is not the release's own %s %s", shorten(ref.Kind), shorten(ref.Name), roleKind, j.name)
	}
	if len(subjects) != 1 {
		return j.deny(o, "%d subjects: the chart binds its one ServiceAccount", len(subjects))
	}
	s := subjects[0]
	if s.Kind != rbacv1.ServiceAccountKind || s.Name != j.name || (s.Namespace != j.namespace && !(roleKind == "Role" && s.Namespace == "")) || s.APIGroup != "" {
		return j.deny(o, "subject %s %s/%s is not the release's ServiceAccount %s/%s", shorten(s.Kind), shorten(s.Namespace), shorten(s.Name), j.namespace, j.name)
	}
	return nil
}

// podMonitor allows the kube-vip chart's PodMonitor: its pods' monitoring port, nothing more.
func (j *judge) podMonitor(o *object, pm *podMonitor) error {
	want := j.selector()
	if !sameLabels(pm.Spec.Selector.MatchLabels, want) {
		return j.deny(o, "spec.selector is not the chart's pods")
	}
	if len(pm.Spec.PodMetricsEndpoints) != 1 || pm.Spec.PodMetricsEndpoints[0].Port != "monitoring" {
		return j.deny(o, "spec.podMetricsEndpoints must be the one port named monitoring")
	}
	return nil
}

// selector is the labels the charts select their pods by.
func (j *judge) selector() map[string]string {
	return map[string]string{"app.kubernetes.io/name": j.name, "app.kubernetes.io/instance": j.release}
}

func sameLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// pinnedRules are the permissions each pinned upstream chart grants (kube-vip 0.9.9,
// kube-vip-cloud-provider 0.2.10), as "<group>/<resource>:<verb>".
func pinnedRules(chart Chart, kind string) map[string]bool {
	out := map[string]bool{}
	add := func(group string, resources, verbs []string) {
		for _, r := range resources {
			for _, v := range verbs {
				out[group+"/"+r+":"+v] = true
			}
		}
	}
	list := func(s ...string) []string { return s }
	switch {
	case chart == Kubevip && kind == "ClusterRole":
		add("", list("services/status"), list("update"))
		add("", list("services", "endpoints"), list("list", "get", "watch", "update"))
		add("", list("nodes"), list("list", "get", "watch", "update", "patch"))
		add("coordination.k8s.io", list("leases"), list("list", "get", "watch", "update", "create"))
		add("discovery.k8s.io", list("endpointslices"), list("list", "get", "watch", "update"))
		add("", list("pods"), list("list"))
	case chart == Kubevip && kind == "Role":
		add("", list("secrets"), list("list", "get"))
	case chart == CloudProvider && kind == "ClusterRole":
		add("coordination.k8s.io", list("leases"), list("get", "create", "update", "list", "put"))
		add("", list("configmaps", "endpoints", "events", "services/status", "leases"), list("*"))
		add("", list("nodes", "services"), list("list", "get", "watch", "update"))
	}
	return out
}
