package leastprivilege

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

// request is one request the operator made, with what the API server's authorizer was asked
// about it.
type request authorizationv1.ResourceAttributes

func (r request) String() string {
	group := r.Group
	if group == "" {
		group = "core"
	}
	resource := r.Resource
	if r.Subresource != "" {
		resource += "/" + r.Subresource
	}
	where := "cluster-wide"
	if r.Namespace != "" {
		where = "in " + r.Namespace
	}
	if r.Name != "" {
		where += " name=" + r.Name
	}
	return fmt.Sprintf("%s %s/%s %s", r.Verb, group, resource, where)
}

// operatorRequests reads, from the API server's audit log from offset on, every distinct request
// the chart's ServiceAccount made and was allowed, in a stable order.
func (e *lpEnv) operatorRequests(log *controlplane.AuditLog, offset int64) []request {
	e.t.Helper()
	user := e.serviceAccountUser()
	seen := map[request]bool{}
	_, err := log.Since(offset, func(ev controlplane.AuditRequest) {
		if ev.User.Username != user || !ev.Counted() || ev.ObjectRef == nil || ev.Code() == 403 {
			return
		}
		o := ev.ObjectRef
		r := request{Verb: ev.Verb, Group: o.APIGroup, Resource: o.Resource, Subresource: o.Subresource, Namespace: o.Namespace, Name: o.Name}
		if r.Verb == "create" {
			// The audit log names the object created; the authorizer was asked before it had one.
			r.Name = ""
		}
		seen[r] = true
	})
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]request, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// allowed asks the API server's authorizer, by SubjectAccessReview, whether the chart's
// ServiceAccount may make request r.
func (e *lpEnv) allowed(r request) (bool, error) {
	sa := e.rbac.serviceAccount
	attrs := authorizationv1.ResourceAttributes(r)
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               e.serviceAccountUser(),
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"},
		ResourceAttributes: &attrs,
	}}
	got, err := e.kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), review, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview %s: %w", r, err)
	}
	return got.Status.Allowed, nil
}

// serviceAccountUser is the user name the API server gives the chart's ServiceAccount.
func (e *lpEnv) serviceAccountUser() string {
	sa := e.rbac.serviceAccount
	return "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
}

// removalRow is one line of the rule-removal table: a grant and the operator's requests the
// authorizer refuses without it.
type removalRow struct {
	grant   grant
	refused []request
}

// ruleRemoval takes the chart's RBAC apart one grant at a time — each verb on each resource of
// each ClusterRole and Role — and asks the API server's authorizer about each of the operator's
// requests without it: the requests it refuses then are the ones that need the grant. The
// operator must not run meanwhile.
func (e *lpEnv) ruleRemoval(requests []request) []removalRow {
	e.t.Helper()
	grants := e.rbac.grants()
	rows := make([]removalRow, len(grants))
	for i, g := range grants {
		e.rbac.apply(e.t, &g)
		e.waitAuthorizer(g, false)
		// Eight reviews at a time; one that fails stops the test here, in the test's goroutine.
		refused := make([]bool, len(requests))
		var reviews errgroup.Group
		reviews.SetLimit(8)
		for j, r := range requests {
			reviews.Go(func() error {
				ok, err := e.allowed(r)
				refused[j] = !ok
				return err
			})
		}
		if err := reviews.Wait(); err != nil {
			e.t.Fatal(err)
		}
		rows[i].grant = g
		for j, r := range requests {
			if refused[j] {
				rows[i].refused = append(rows[i].refused, r)
			}
		}
		e.rbac.apply(e.t, nil)
		e.waitAuthorizer(g, true)
	}
	return rows
}

// checkEveryGrantNeeded prints the rule-removal table and fails for a grant none of the
// operator's requests needs: the chart must not grant it.
func checkEveryGrantNeeded(t *testing.T, requests []request, rows []removalRow) {
	var table strings.Builder
	fmt.Fprintf(&table, "%-100s %s\n", "grant removed", "requests refused without it")
	for _, row := range rows {
		needs := "(none)"
		if len(row.refused) > 0 {
			needs = row.refused[0].String()
			if n := len(row.refused) - 1; n > 0 {
				needs += fmt.Sprintf(" and %d more", n)
			}
		}
		fmt.Fprintf(&table, "%-100s %s\n", row.grant.role+": "+row.grant.String(), needs)
	}
	t.Logf("rule-removal table, %d grants, judged on the %d distinct requests of the run:\n%s", len(rows), len(requests), table.String())
	for _, row := range rows {
		if len(row.refused) == 0 {
			t.Errorf("%s: %s: the authorizer refuses none of the operator's requests without it; no scenario needs it, so the chart must not grant it",
				row.grant.role, row.grant)
		}
	}
}
