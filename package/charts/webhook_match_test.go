package charts

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
)

// rancherBackupUser is the user a Rancher Backups restore writes as: the rancher-backup chart
// (rancher/backup-restore-operator charts/rancher-backup, v4.0.4 for Rancher 2.8 to v11.0.1 for
// Rancher 2.15) names its ServiceAccount after the chart, in its release namespace, which Rancher
// fixes to cattle-resources-system (catalog.cattle.io/namespace); the operator uses it as it is,
// without impersonation.
const rancherBackupUser = "system:serviceaccount:cattle-resources-system:rancher-backup"

// webhookRequest is one write the API server may send to a webhook.
type webhookRequest struct {
	resource, kind, namespace, name string
}

// matches evaluates w's matchConditions for a request of username the way the API server does:
// k8s.io/apiserver's matcher, with the condition compiler of generic webhooks, compiled as a new
// expression on the oldest Kubernetes the chart admits (the CEL library an API server of that
// version accepts when the configuration is written).
func matches(t *testing.T, w admissionregistrationv1.ValidatingWebhook, username string, r webhookRequest) bool {
	t.Helper()
	oldest, err := version.ParseGeneric(MinKubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	exprs := make([]plugincel.ExpressionAccessor, 0, len(w.MatchConditions))
	for _, c := range w.MatchConditions {
		exprs = append(exprs, &matchconditions.MatchCondition{Name: c.Name, Expression: c.Expression})
	}
	compiler := plugincel.NewConditionCompiler(environment.MustBaseEnvSet(version.MajorMinor(oldest.Major(), oldest.Minor())))
	evaluator := compiler.CompileCondition(exprs, plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.NewExpressions)
	for _, e := range evaluator.CompilationErrors() {
		t.Errorf("%s: a Kubernetes %s API server refuses a matchCondition: %v", w.Name, MinKubeVersion, e)
	}
	fail := admissionregistrationv1.Fail
	matcher := matchconditions.NewMatcher(evaluator, &fail, "webhook", "validating", w.Name)

	gvk := schema.GroupVersionKind{Group: w.Rules[0].APIGroups[0], Version: w.Rules[0].APIVersions[0], Kind: r.kind}
	gvr := gvk.GroupVersion().WithResource(r.resource)
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(r.namespace)
	obj.SetName(r.name)
	attrs := admission.NewAttributesRecord(obj, nil, gvk, r.namespace, r.name, gvr, "", admission.Create, nil, false,
		&user.DefaultInfo{Name: username})
	res := matcher.Match(context.Background(), &admission.VersionedAttributes{Attributes: attrs, VersionedObject: obj, VersionedKind: gvk}, nil, nil)
	if res.Error != nil {
		t.Fatalf("%s: evaluating the matchConditions for %s: %v", w.Name, username, res.Error)
	}
	return res.Matches
}

// TestWebhookExemptions runs the rendered matchConditions as the API server does: a write to a
// range, a FloatingIP or kube-fip-config is sent to the webhook unless it comes from the operator,
// the uninstall hook or rancher-backup's ServiceAccount in the namespace backup.rancherBackupNamespace
// names (a Rancher Backups restore writes ranges while it holds the operator at 0 replicas, so a
// range write sent to the webhook would be refused by failurePolicy Fail). A person, another
// ServiceAccount of rancher-backup's namespace, and rancher-backup's name in another namespace are
// judged. With backup.rancherBackupNamespace empty, rancher-backup is judged too.
func TestWebhookExemptions(t *testing.T) {
	operator := "system:serviceaccount:" + testNamespace + ":kube-fip-operator"
	cleanup := "system:serviceaccount:" + testNamespace + ":kube-fip-operator-cleanup"
	requests := map[string]webhookRequest{
		"floatingipranges.kubefip.k8s.binbash.org": {"floatingipranges", "FloatingIPRange", "", "guest-vlan"},
		"floatingips.kubefip.k8s.binbash.org":      {"floatingips", "FloatingIP", "c-m-abcdefgh", "demo-kubevip"},
		"config.kubefip.k8s.binbash.org":           {"configmaps", "ConfigMap", testNamespace, "kube-fip-config"},
	}
	for _, tc := range []struct {
		name   string
		values map[string]interface{}
		exempt map[string]bool
	}{
		{"defaults", nil, map[string]bool{
			operator: true, cleanup: true, rancherBackupUser: true,
			"admin": false, "system:serviceaccount:cattle-resources-system:default": false,
			"system:serviceaccount:" + testNamespace + ":rancher-backup":                     false,
			"system:serviceaccount:cattle-resources-system:rancher-backup-other":             false,
			"system:serviceaccount:cattle-resources-system:rancher-backup', 'x":              false,
			strings.Replace(rancherBackupUser, "cattle-resources-system", "cattle-other", 1): false,
		}},
		{"another namespace", map[string]interface{}{"backup": map[string]interface{}{"rancherBackupNamespace": "backups"}}, map[string]bool{
			operator: true, "system:serviceaccount:backups:rancher-backup": true, rancherBackupUser: false,
		}},
		{"no exemption", map[string]interface{}{"backup": map[string]interface{}{"rancherBackupNamespace": ""}}, map[string]bool{
			operator: true, cleanup: true, rancherBackupUser: false,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var vwc admissionregistrationv1.ValidatingWebhookConfiguration
			convert(t, find(t, renderOperator(t, tc.values), "ValidatingWebhookConfiguration", "kube-fip-operator"), &vwc)
			if len(vwc.Webhooks) != len(requests) {
				t.Fatalf("%d webhooks; want %d", len(vwc.Webhooks), len(requests))
			}
			for _, w := range vwc.Webhooks {
				r, ok := requests[w.Name]
				if !ok {
					t.Fatalf("unexpected webhook %s", w.Name)
				}
				for username, exempt := range tc.exempt {
					if sent := matches(t, w, username, r); sent == exempt {
						t.Errorf("%s: a write of %s %s by %q is sent to the webhook: %v; want %v", w.Name, r.kind, r.name, username, sent, !exempt)
					}
				}
			}
			// kube-fip-config alone goes to the config webhook: another ConfigMap is not judged.
			for _, w := range vwc.Webhooks {
				if w.Name == "config.kubefip.k8s.binbash.org" && matches(t, w, "admin", webhookRequest{"configmaps", "ConfigMap", testNamespace, "other"}) {
					t.Errorf("%s judges ConfigMap %s/other", w.Name, testNamespace)
				}
			}
		})
	}
}

// TestRancherBackupUserIsTheChartDefault: the exempt user the test above names is the chart's
// default, spelled as the API server spells a ServiceAccount.
func TestRancherBackupUserIsTheChartDefault(t *testing.T) {
	_, values := loadQuestions(t)
	ns, err := values.PathValue("backup.rancherBackupNamespace")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("system:serviceaccount:%s:rancher-backup", ns); got != rancherBackupUser {
		t.Errorf("the chart exempts %s by default; want %s", got, rancherBackupUser)
	}
}
