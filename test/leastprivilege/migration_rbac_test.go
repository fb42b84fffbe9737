package leastprivilege

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/test/rig"
)

// originalLeftovers are the Roles and RoleBindings the original kube-fip-operator's install left
// in Rancher's namespaces, each Role bound by the RoleBinding of its name to the operator's
// ServiceAccount. They are modelled with Secret access wider than the chart's own (get, list and
// watch), the access the migration must take away.
var originalLeftovers = map[string]string{ // name -> namespace
	"kube-fip-kubeconfig-read": "fleet-default",
	"kube-fip-clusterid-read":  "cattle-global-data",
}

// readmeMigrationDeletes returns the `kubectl -n <namespace> delete role|rolebinding <name>`
// commands of the migration section of docs/operations.md, as namespace/kind/name.
func readmeMigrationDeletes(t *testing.T) [][3]string {
	t.Helper()
	section, err := rig.DocSection("docs/operations.md", "## Migrating from the original kube-fip-operator")
	if err != nil {
		t.Fatal(err)
	}
	var out [][3]string
	for _, m := range regexp.MustCompile(`(?m)^\s*kubectl -n (\S+) delete (role|rolebinding) (\S+)\s*$`).FindAllStringSubmatch(section, -1) {
		out = append(out, [3]string{m[1], m[2], m[3]})
	}
	return out
}

// TestMigrationRemovesOriginalRoles: the original's Roles and RoleBindings in fleet-default and
// cattle-global-data bind the ServiceAccount name the chart reuses, so after the chart is
// installed they go on granting its ServiceAccount the original's Secret access. The migration
// step of docs/operations.md deletes them; afterwards the ServiceAccount may no longer list Secrets there, may
// still get them by name (the chart's own Roles), and the operator passes every scenario of the
// least-privilege suite under the chart's RBAC alone.
func TestMigrationRemovesOriginalRoles(t *testing.T) {
	e := newLPEnv(t, shared.Suite, "kube-fip-lp-migrate", "m", 182)
	ctx := context.Background()
	sa := e.rbac.serviceAccount
	for name, ns := range originalLeftovers {
		e.s.CreateNamespace(t, ns)
		role := &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}}},
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}},
		}
		if _, err := e.kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = e.kube.RbacV1().RoleBindings(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = e.kube.RbacV1().Roles(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		// Left in place, the original's access reaches the chart's ServiceAccount.
		e.waitAuthorizer(grant{resource: "secrets", verb: "list", namespace: ns}, true)
	}

	deletes := readmeMigrationDeletes(t)
	if len(deletes) == 0 {
		t.Fatal("the migration section of docs/operations.md deletes no Role or RoleBinding")
	}
	for _, d := range deletes {
		ns, kind, name := d[0], d[1], d[2]
		if originalLeftovers[name] != ns {
			t.Errorf("the migration deletes %s %s/%s, which the original did not leave", kind, ns, name)
			continue
		}
		if err := rbacCall(e, kind, ns, name, true); err != nil {
			t.Errorf("kubectl -n %s delete %s %s: %v", ns, kind, name, err)
		}
	}
	for name, ns := range originalLeftovers {
		for _, kind := range []string{"role", "rolebinding"} {
			if err := rbacCall(e, kind, ns, name, false); !apierrors.IsNotFound(err) {
				t.Errorf("after the migration's steps, %s %s/%s is still there (%v)", kind, ns, name, err)
			}
		}
		e.waitAuthorizer(grant{resource: "secrets", verb: "list", namespace: ns}, false)
		e.waitAuthorizer(grant{resource: "secrets", verb: "get", namespace: ns}, true)
	}
	if t.Failed() {
		return
	}

	res := e.run()
	if res.failed != "" {
		t.Errorf("scenario %s failed under the chart's RBAC after the migration: %v", res.failed, res.err) // refusals included
		fmt.Fprintf(os.Stderr, "---- operator output (%s) ----\n%s\n", t.Name(), res.logs)
	}
}

// rbacCall gets (or, with del, deletes) the Role or RoleBinding ns/name, as kubectl's kind names it.
func rbacCall(e *lpEnv, kind, ns, name string, del bool) error {
	ctx := context.Background()
	var err error
	switch {
	case kind == "role" && del:
		err = e.kube.RbacV1().Roles(ns).Delete(ctx, name, metav1.DeleteOptions{})
	case kind == "role":
		_, err = e.kube.RbacV1().Roles(ns).Get(ctx, name, metav1.GetOptions{})
	case del:
		err = e.kube.RbacV1().RoleBindings(ns).Delete(ctx, name, metav1.DeleteOptions{})
	default:
		_, err = e.kube.RbacV1().RoleBindings(ns).Get(ctx, name, metav1.GetOptions{})
	}
	return err
}
