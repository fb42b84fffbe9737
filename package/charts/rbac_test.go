package charts

import (
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// grants expands RBAC rules into "group resource verb" lines, with " name=<name>" for a rule
// limited to named objects, so two rule sets compare exactly whatever their grouping.
func grants(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					line := strings.Join([]string{g, res, v}, " ")
					if len(r.ResourceNames) == 0 {
						out = append(out, line)
					}
					for _, name := range r.ResourceNames {
						out = append(out, line+" name="+name)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func grantsOf(group string, resources []string, verbs ...string) []string {
	var out []string
	for _, r := range resources {
		for _, v := range verbs {
			out = append(out, strings.Join([]string{group, r, v}, " "))
		}
	}
	return out
}

// wantClusterGrants is exactly what the operator does cluster-wide: each grant is shown needed
// by test/leastprivilege's TestLeastPrivilegeUnderChartRBAC/RuleRemoval.
func wantClusterGrants() []string {
	watch := []string{"list", "watch"}
	var out []string
	out = append(out, grantsOf("kubefip.k8s.binbash.org", []string{"floatingipranges"}, "list", "watch", "update")...)
	out = append(out, grantsOf("kubefip.k8s.binbash.org", []string{"floatingipallocations"}, "list", "watch", "create", "update", "delete")...)
	out = append(out, grantsOf("kubefip.k8s.binbash.org", []string{"floatingips"}, "get", "list", "watch", "create", "update", "delete")...)
	out = append(out, grantsOf("kubefip.k8s.binbash.org", []string{"floatingipranges/status", "floatingips/status"}, "update")...)
	out = append(out, grantsOf("", []string{"namespaces"}, watch...)...)
	out = append(out, grantsOf("provisioning.cattle.io", []string{"clusters"}, watch...)...)
	out = append(out, grantsOf("management.cattle.io", []string{"clusters"}, watch...)...)
	out = append(out, grantsOf("rke-machine-config.cattle.io", []string{"harvesterconfigs"}, watch...)...)
	out = append(out, "management.cattle.io settings get name=internal-server-url", "management.cattle.io settings get name=server-url")
	out = append(out, grantsOf("", []string{"events"}, "create", "patch")...)
	out = append(out, "admissionregistration.k8s.io validatingwebhookconfigurations get name=kube-fip-operator",
		"admissionregistration.k8s.io validatingwebhookconfigurations update name=kube-fip-operator")
	sort.Strings(out)
	return out
}

func checkGrants(t *testing.T, what string, rules []rbacv1.PolicyRule, want []string) {
	t.Helper()
	sort.Strings(want)
	if got := grants(rules); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s grants:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			t.Errorf("%s: unexpected rule %+v", what, r)
		}
	}
}

// TestRBAC checks every rendered ClusterRole and Role rule by rule against what the operator does:
// no wildcard anywhere, Secrets only in the two configured namespaces, and every binding binds only
// the operator's service account. It runs with the defaults and with custom namespaces.
func TestRBAC(t *testing.T) {
	for _, tc := range []struct {
		name       string
		values     map[string]interface{}
		secretsNSs []string
	}{
		{"defaults", nil, []string{"cattle-global-data", "fleet-default"}},
		{"all-switches", allSwitchesOn(), []string{"fleet-other", "global-other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderOperator(t, tc.values)
			checkNoWildcard(t, objs)

			var cr rbacv1.ClusterRole
			convert(t, find(t, objs, "ClusterRole", "kube-fip-operator"), &cr)
			checkGrants(t, "ClusterRole", cr.Rules, wantClusterGrants())

			var secretNSs []string
			for _, o := range ofKind(objs, "Role") {
				var r rbacv1.Role
				convert(t, o, &r)
				switch {
				case r.Name == "kube-fip-operator" && r.Namespace == testNamespace:
					checkGrants(t, "Role "+r.Namespace+"/"+r.Name, r.Rules, append(append(
						grantsOf("", []string{"configmaps"}, "get", "list", "watch"),
						grantsOf("coordination.k8s.io", []string{"leases"}, "get", "create", "update")...),
						" secrets get name=kube-fip-operator-security",
						" secrets get name=kube-fip-operator-webhook-tls", " secrets update name=kube-fip-operator-webhook-tls"))
					if len(r.Rules) != 4 {
						t.Errorf("Role %s/%s without a chart credentials Secret: %d rules, want 4", r.Namespace, r.Name, len(r.Rules))
					}
				case r.Name == "kube-fip-operator-secrets":
					secretNSs = append(secretNSs, r.Namespace)
					checkGrants(t, "Role "+r.Namespace+"/"+r.Name, r.Rules, grantsOf("", []string{"secrets"}, "get"))
				default:
					t.Errorf("unexpected Role %s/%s", r.Namespace, r.Name)
				}
			}
			sort.Strings(secretNSs)
			if strings.Join(secretNSs, ",") != strings.Join(tc.secretsNSs, ",") {
				t.Errorf("Secrets readable in %v; want exactly %v", secretNSs, tc.secretsNSs)
			}
			checkBindings(t, objs)
		})
	}
}

// checkNoWildcard looks at every rule of every role for a "*" in any field.
func checkNoWildcard(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range append(ofKind(objs, "ClusterRole"), ofKind(objs, "Role")...) {
		var r rbacv1.ClusterRole // a Role's rules have the same shape
		convert(t, &unstructured.Unstructured{Object: map[string]interface{}{"rules": o.Object["rules"]}}, &r)
		for _, rule := range r.Rules {
			for _, field := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs, rule.ResourceNames, rule.NonResourceURLs} {
				for _, v := range field {
					if strings.Contains(v, "*") {
						t.Errorf("%s %s: wildcard in rule %+v", o.GetKind(), o.GetName(), rule)
					}
				}
			}
		}
	}
}

// checkBindings: each binding refers to the role of its own name and binds only the operator's
// service account in the release namespace.
func checkBindings(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	want := rbacv1.Subject{Kind: "ServiceAccount", Name: "kube-fip-operator", Namespace: testNamespace}
	bindings := append(ofKind(objs, "ClusterRoleBinding"), ofKind(objs, "RoleBinding")...)
	if len(bindings) == 0 {
		t.Fatal("no bindings rendered")
	}
	for _, o := range bindings {
		var b rbacv1.RoleBinding // a ClusterRoleBinding has the same fields
		convert(t, &unstructured.Unstructured{Object: map[string]interface{}{
			"roleRef": o.Object["roleRef"], "subjects": o.Object["subjects"],
		}}, &b)
		wantKind := strings.TrimSuffix(o.GetKind(), "Binding")
		if b.RoleRef.Kind != wantKind || b.RoleRef.Name != o.GetName() || b.RoleRef.APIGroup != rbacv1.GroupName {
			t.Errorf("%s %s: roleRef %+v", o.GetKind(), o.GetName(), b.RoleRef)
		}
		if len(b.Subjects) != 1 || b.Subjects[0] != want {
			t.Errorf("%s %s: subjects %+v; want only %+v", o.GetKind(), o.GetName(), b.Subjects, want)
		}
	}
}
