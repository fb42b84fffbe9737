package guestcluster

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubefip/kube-fip-operator/pkg/config"
)

// renderPolicy judges what Helm renders for one of the two charts, whatever the values asked for:
// only the kinds the upstream chart creates, in the release's namespace, with one container of an
// allowed image, and host access only where the upstream chart needs it (kube-vip's DaemonSet:
// hostNetwork, NET_ADMIN and NET_RAW).
type renderPolicy struct {
	chart     string
	namespace string
	images    config.Policy
	kubevip   *kubevipJudge
	// roles are the roles the release renders, and refs the roles its bindings name, each by
	// "<kind> <namespace>/<name>": a binding may grant only a role of the release's own.
	roles map[string]bool
	refs  []roleRef
}

// roleRef is one binding's role, as done checks it.
type roleRef struct{ binding, role string }

// newRenderPolicy is the policy of one install or upgrade of chart in namespace.
func newRenderPolicy(chart, namespace string, images config.Policy, kubevip *kubevipJudge) *renderPolicy {
	return &renderPolicy{chart: chart, namespace: namespace, images: images, kubevip: kubevip, roles: map[string]bool{}}
}

// workloadKind is the one workload each chart renders.
func (r *renderPolicy) workloadKind() string {
	if r.chart == "kube-vip" {
		return "DaemonSet"
	}
	return "Deployment"
}

func (r *renderPolicy) judge(apiVersion, kind string, obj runtime.Object) error {
	refuse := func(format string, args ...interface{}) error {
		return &renderRefusal{fmt.Sprintf("the %s chart rendered %s %s: %s", r.chart, kind, nameOf(obj), fmt.Sprintf(format, args...))}
	}
	if m, ok := obj.(metav1.Object); ok && m.GetNamespace() != "" && m.GetNamespace() != r.namespace {
		return refuse("namespace %s is not the release's, %s", m.GetNamespace(), r.namespace)
	}
	switch o := obj.(type) {
	case *corev1.ServiceAccount:
	case *corev1.ConfigMap:
		if r.chart == "kube-vip" {
			return refuse("the kube-vip chart creates no ConfigMap")
		}
	case *rbacv1.ClusterRole:
		r.roles["ClusterRole /"+o.Name] = true
		return rules(o.Rules, refuse)
	case *rbacv1.Role:
		r.roles["Role "+r.namespace+"/"+o.Name] = true
		return rules(o.Rules, refuse)
	case *rbacv1.ClusterRoleBinding:
		r.refs = append(r.refs, roleRef{binding: kind + " " + nameOf(obj), role: o.RoleRef.Kind + " /" + o.RoleRef.Name})
		return binding(o.Name, o.RoleRef, o.Subjects, r.namespace, refuse)
	case *rbacv1.RoleBinding:
		scope := r.namespace
		if o.RoleRef.Kind == "ClusterRole" {
			scope = ""
		}
		r.refs = append(r.refs, roleRef{binding: kind + " " + r.namespace + "/" + o.Name, role: o.RoleRef.Kind + " " + scope + "/" + o.RoleRef.Name})
		return binding(o.Name, o.RoleRef, o.Subjects, r.namespace, refuse)
	case *appsv1.DaemonSet:
		if r.workloadKind() != kind {
			return refuse("the %s chart creates no DaemonSet", r.chart)
		}
		return r.pod("DaemonSet "+o.Namespace+"/"+o.Name, &o.Spec.Template.Spec, refuse)
	case *appsv1.Deployment:
		if r.workloadKind() != kind {
			return refuse("the %s chart creates no Deployment", r.chart)
		}
		return r.pod("Deployment "+o.Namespace+"/"+o.Name, &o.Spec.Template.Spec, refuse)
	default:
		if apiVersion == "monitoring.coreos.com/v1" && kind == "PodMonitor" && r.chart == "kube-vip" {
			return nil // the chart's podMonitor value: a scrape configuration, no workload
		}
		return refuse("a %s (%s) is not a kind the chart creates", kind, apiVersion)
	}
	return nil
}

// pod allows one container of an allowed image, no init or ephemeral containers, no host paths,
// no privilege; host network and NET_ADMIN/NET_RAW only for kube-vip.
func (r *renderPolicy) pod(workload string, spec *corev1.PodSpec, refuse func(string, ...interface{}) error) error {
	host := r.chart == "kube-vip"
	switch {
	case len(spec.Containers) != 1:
		return refuse("%d containers; the chart runs one", len(spec.Containers))
	case len(spec.InitContainers)+len(spec.EphemeralContainers) > 0:
		return refuse("spec.initContainers: the chart runs none")
	case spec.HostPID || spec.HostIPC:
		return refuse("spec.hostPID or spec.hostIPC: not allowed")
	case spec.HostNetwork && !host:
		return refuse("spec.hostNetwork: the %s chart does not use the host's network", r.chart)
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			return refuse("spec.volumes[%s].hostPath: not allowed", v.Name)
		}
	}
	if sc := spec.SecurityContext; sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == 0 && !host {
		return refuse("spec.securityContext.runAsUser 0: not allowed")
	}
	c := &spec.Containers[0]
	if !r.images.ImageAllowed(c.Image) {
		return refuse("containers[%s].image %s is not under the deployment's allowed image prefixes", c.Name, c.Image)
	}
	for _, port := range c.Ports {
		if port.HostPort != 0 && !host {
			return refuse("containers[%s].ports hostPort %d: not allowed", c.Name, port.HostPort)
		}
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.Privileged != nil && *sc.Privileged {
			return refuse("containers[%s].securityContext.privileged: not allowed", c.Name)
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 && !host {
			return refuse("containers[%s].securityContext.runAsUser 0: not allowed", c.Name)
		}
		if sc.Capabilities != nil {
			for _, add := range sc.Capabilities.Add {
				if !host || (add != "NET_ADMIN" && add != "NET_RAW") {
					return refuse("containers[%s].securityContext.capabilities.add %s: not allowed", c.Name, add)
				}
			}
		}
	}
	if r.kubevip != nil && host {
		return r.kubevip.judge(workload, c)
	}
	return nil
}

// rules refuses wildcard API groups, resources and URLs: the charts' roles name their resources
// (kube-vip-cloud-provider 0.2.10 grants every verb on the ones it names, which stays allowed).
func rules(rs []rbacv1.PolicyRule, refuse func(string, ...interface{}) error) error {
	for i, rule := range rs {
		for _, list := range [][]string{rule.APIGroups, rule.Resources, rule.NonResourceURLs} {
			for _, s := range list {
				if s == "*" {
					return refuse("rules[%d] holds a wildcard", i)
				}
			}
		}
	}
	return nil
}

// binding allows only a binding of the role of its own name (the charts name both alike) to
// ServiceAccounts of the release's namespace.
func binding(name string, ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespace string, refuse func(string, ...interface{}) error) error {
	if ref.Name != name {
		return refuse("roleRef %s %s is not the chart's own role %s", ref.Kind, ref.Name, name)
	}
	for _, s := range subjects {
		if s.Kind != rbacv1.ServiceAccountKind || (s.Namespace != "" && s.Namespace != namespace) {
			return refuse("subject %s %s/%s is not a ServiceAccount of the release", s.Kind, s.Namespace, s.Name)
		}
	}
	return nil
}

// done refuses a binding of a role the release does not render itself: a binding named like a
// role of the cluster's (cluster-admin, say) passes the name rule alone.
func (r *renderPolicy) done() error {
	for _, ref := range r.refs {
		if !r.roles[ref.role] {
			return &renderRefusal{fmt.Sprintf("the %s chart rendered %s: its roleRef %s is not a role the release creates",
				r.chart, ref.binding, strings.Replace(ref.role, " /", " ", 1))}
		}
	}
	return nil
}

func nameOf(obj runtime.Object) string {
	if m, ok := obj.(metav1.Object); ok {
		if m.GetNamespace() != "" {
			return m.GetNamespace() + "/" + m.GetName()
		}
		return m.GetName()
	}
	return "(unknown kind)"
}

// renderRefusal is a rendered object the chart may not create.
type renderRefusal struct{ message string }

func (e *renderRefusal) Error() string { return e.message }
