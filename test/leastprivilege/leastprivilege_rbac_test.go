package leastprivilege

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// chartRBAC is the operator chart's ServiceAccount, roles and bindings, rendered for one release
// namespace exactly as `helm template` renders them.
type chartRBAC struct {
	// s is the control plane the objects are applied to.
	s                   *suite.Suite
	serviceAccount      corev1.ServiceAccount
	clusterRoles        []rbacv1.ClusterRole
	clusterRoleBindings []rbacv1.ClusterRoleBinding
	roles               []rbacv1.Role
	roleBindings        []rbacv1.RoleBinding
}

// grant is one verb on one resource that one role of the chart allows: the unit the rule-removal
// table takes away.
type grant struct {
	role                  string // "ClusterRole/<name>" or "Role/<namespace>/<name>"
	group, resource, verb string
	namespace, roleName   string
	clusterScoped         bool
	// name is an object the rule names, when it names any: the request the authorizer is asked
	// about must be for one of them.
	name string
}

func (g grant) String() string {
	group := g.group
	if group == "" {
		group = "core"
	}
	where := "cluster-wide"
	if !g.clusterScoped {
		where = "in " + g.namespace
	}
	return fmt.Sprintf("%s %s/%s %s", g.verb, group, g.resource, where)
}

// chartValues are the values the suite renders the chart with: its defaults, and the DNS names on
// (dns.enabled), so that the rights that adds are proven needed too. The operator runs with the
// flags the chart's Deployment gives it for them.
var chartValues = map[string]interface{}{"dns": map[string]interface{}{"enabled": true}}

// renderChartRBAC renders the operator chart with chartValues into release namespace ns and keeps
// the ServiceAccount and the RBAC objects, to be applied to control plane s.
func renderChartRBAC(t *testing.T, s *suite.Suite, ns string) *chartRBAC {
	t.Helper()
	objs := chartrepo.RenderOperatorChart(t, ns, chartValues)
	out := &chartRBAC{s: s}
	for _, o := range objs {
		if _, hook := o.GetAnnotations()["helm.sh/hook"]; hook {
			continue // a hook's own ServiceAccount and roles, not the operator's
		}
		var target interface{}
		switch o.GetKind() {
		case "ServiceAccount":
			target = &out.serviceAccount
		case "ClusterRole":
			out.clusterRoles = append(out.clusterRoles, rbacv1.ClusterRole{})
			target = &out.clusterRoles[len(out.clusterRoles)-1]
		case "ClusterRoleBinding":
			out.clusterRoleBindings = append(out.clusterRoleBindings, rbacv1.ClusterRoleBinding{})
			target = &out.clusterRoleBindings[len(out.clusterRoleBindings)-1]
		case "Role":
			out.roles = append(out.roles, rbacv1.Role{})
			target = &out.roles[len(out.roles)-1]
		case "RoleBinding":
			out.roleBindings = append(out.roleBindings, rbacv1.RoleBinding{})
			target = &out.roleBindings[len(out.roleBindings)-1]
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, target); err != nil {
			t.Fatalf("converting the rendered %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	if out.serviceAccount.Name == "" || len(out.clusterRoles) == 0 || len(out.roles) == 0 {
		t.Fatalf("the chart rendered no ServiceAccount, ClusterRole or Role")
	}
	return out
}

// grants lists every (role, group, resource, verb) the chart allows, in a stable order.
func (r *chartRBAC) grants() []grant {
	var out []grant
	add := func(role, ns, name string, cluster bool, rules []rbacv1.PolicyRule) {
		for _, rule := range rules {
			for _, group := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, verb := range rule.Verbs {
						g := grant{role: role, namespace: ns, roleName: name, clusterScoped: cluster,
							group: group, resource: res, verb: verb}
						if len(rule.ResourceNames) > 0 {
							g.name = rule.ResourceNames[0]
						}
						out = append(out, g)
					}
				}
			}
		}
	}
	for _, cr := range r.clusterRoles {
		add("ClusterRole/"+cr.Name, "", cr.Name, true, cr.Rules)
	}
	for _, role := range r.roles {
		add("Role/"+role.Namespace+"/"+role.Name, role.Namespace, role.Name, false, role.Rules)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].role < out[j].role })
	return out
}

// without returns rules minus the one grant, as rules of one group and resource each, each kept
// to the objects its rule names.
func without(rules []rbacv1.PolicyRule, g *grant) []rbacv1.PolicyRule {
	if g == nil {
		return rules
	}
	var out []rbacv1.PolicyRule
	for _, rule := range rules {
		for _, group := range rule.APIGroups {
			for _, res := range rule.Resources {
				var verbs []string
				for _, v := range rule.Verbs {
					if group != g.group || res != g.resource || v != g.verb {
						verbs = append(verbs, v)
					}
				}
				if len(verbs) > 0 {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{res}, ResourceNames: rule.ResourceNames, Verbs: verbs})
				}
			}
		}
	}
	return out
}

// apply creates or updates the ServiceAccount, roles and bindings in the test API server, the
// roles without the grant skip when it is not nil. The RBAC authorizer follows role changes
// within moments, so one ServiceAccount serves every row of the rule-removal table.
func (r *chartRBAC) apply(t *testing.T, skip *grant) {
	t.Helper()
	ctx := context.Background()
	kube := r.s.Kube
	for _, ns := range r.namespaces() {
		r.s.CreateNamespace(t, ns)
	}
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("applying %s: %v", what, err)
		}
	}
	sa := r.serviceAccount.DeepCopy()
	if _, err := kube.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		check("ServiceAccount", err)
	}
	for _, cr := range r.clusterRoles {
		cr := cr.DeepCopy()
		if skip != nil && skip.clusterScoped && skip.roleName == cr.Name {
			cr.Rules = without(cr.Rules, skip)
		}
		_, err := kube.RbacV1().ClusterRoles().Update(ctx, cr, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			_, err = kube.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{})
		}
		check("ClusterRole "+cr.Name, err)
	}
	for _, role := range r.roles {
		role := role.DeepCopy()
		if skip != nil && !skip.clusterScoped && skip.roleName == role.Name && skip.namespace == role.Namespace {
			role.Rules = without(role.Rules, skip)
		}
		_, err := kube.RbacV1().Roles(role.Namespace).Update(ctx, role, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			_, err = kube.RbacV1().Roles(role.Namespace).Create(ctx, role, metav1.CreateOptions{})
		}
		check("Role "+role.Namespace+"/"+role.Name, err)
	}
	for _, b := range r.clusterRoleBindings {
		b := b.DeepCopy()
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			check("ClusterRoleBinding "+b.Name, err)
		}
	}
	for _, b := range r.roleBindings {
		b := b.DeepCopy()
		if _, err := kube.RbacV1().RoleBindings(b.Namespace).Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			check("RoleBinding "+b.Namespace+"/"+b.Name, err)
		}
	}
}

// deleteAll removes what apply created, except namespaces.
func (r *chartRBAC) deleteAll() {
	ctx := context.Background()
	kube := r.s.Kube
	del := metav1.DeleteOptions{}
	for _, b := range r.clusterRoleBindings {
		_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, b.Name, del)
	}
	for _, b := range r.roleBindings {
		_ = kube.RbacV1().RoleBindings(b.Namespace).Delete(ctx, b.Name, del)
	}
	for _, cr := range r.clusterRoles {
		_ = kube.RbacV1().ClusterRoles().Delete(ctx, cr.Name, del)
	}
	for _, role := range r.roles {
		_ = kube.RbacV1().Roles(role.Namespace).Delete(ctx, role.Name, del)
	}
	_ = kube.CoreV1().ServiceAccounts(r.serviceAccount.Namespace).Delete(ctx, r.serviceAccount.Name, del)
}

func (r *chartRBAC) namespaces() []string {
	seen := map[string]bool{r.serviceAccount.Namespace: true}
	for _, role := range r.roles {
		seen[role.Namespace] = true
	}
	var out []string
	for ns := range seen {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// refusal matches the API server's Forbidden message, however a log line quotes it:
// `User "..." cannot <verb> resource "<resource>" in API group "<group>" in the namespace "<ns>"`
// or `... at the cluster scope`.
var refusal = regexp.MustCompile(`cannot (\w+) resource \\*"([^"\\]+)\\*" in API group \\*"([^"\\]*)\\*"(?: in the namespace \\*"([^"\\]+)|( at the cluster scope))`)

// refusals returns the distinct requests the API server refused, as "verb group/resource where",
// in the order they first appear in logs.
func refusals(logs string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range refusal.FindAllStringSubmatch(logs, -1) {
		g := grant{verb: m[1], resource: m[2], group: m[3], namespace: m[4], clusterScoped: m[5] != ""}
		if s := g.String(); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
