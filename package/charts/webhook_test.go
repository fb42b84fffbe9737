package charts

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestWebhookConfiguration: the chart's webhook is called for ranges (create, edit, delete),
// FloatingIPs (create, edit) and kube-fip-config only, each with the failure policy of its values
// key; the operator's and the uninstall hook's ServiceAccounts are exempt from every rule; the
// Service reaches the webhook port of every replica; switched off, none of it is rendered and the
// operator is not told to serve.
func TestWebhookConfiguration(t *testing.T) {
	objs := renderOperator(t, map[string]interface{}{"webhook": map[string]interface{}{
		"failurePolicy": map[string]interface{}{"floatingIPs": "Fail"},
	}})
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	convert(t, find(t, objs, "ValidatingWebhookConfiguration", "kube-fip-operator"), &vwc)
	want := map[string]struct {
		resource, policy, operations string
	}{
		"floatingipranges.kubefip.k8s.binbash.org": {"floatingipranges", "Fail", "CREATE UPDATE DELETE"},
		"floatingips.kubefip.k8s.binbash.org":      {"floatingips", "Fail", "CREATE UPDATE"},
		"config.kubefip.k8s.binbash.org":           {"configmaps", "Ignore", "CREATE UPDATE"},
	}
	if len(vwc.Webhooks) != len(want) {
		t.Fatalf("%d webhooks, want %d", len(vwc.Webhooks), len(want))
	}
	for _, w := range vwc.Webhooks {
		exp, ok := want[w.Name]
		if !ok {
			t.Errorf("unexpected webhook %s", w.Name)
			continue
		}
		var ops []string
		for _, o := range w.Rules[0].Operations {
			ops = append(ops, string(o))
		}
		if len(w.Rules) != 1 || len(w.Rules[0].Resources) != 1 || w.Rules[0].Resources[0] != exp.resource || strings.Join(ops, " ") != exp.operations {
			t.Errorf("%s rules %+v; want %s on %s", w.Name, w.Rules, exp.operations, exp.resource)
		}
		if w.FailurePolicy == nil || string(*w.FailurePolicy) != exp.policy {
			t.Errorf("%s failurePolicy %v, want %s", w.Name, w.FailurePolicy, exp.policy)
		}
		s := w.ClientConfig.Service
		if s == nil || s.Name != "kube-fip-operator-webhook" || s.Namespace != testNamespace || s.Path == nil || *s.Path != "/v1/webhook/validation" {
			t.Errorf("%s clientConfig %+v", w.Name, w.ClientConfig)
		}
		if len(w.MatchConditions) == 0 || !strings.Contains(w.MatchConditions[0].Expression, "system:serviceaccount:"+testNamespace+":kube-fip-operator'") ||
			!strings.Contains(w.MatchConditions[0].Expression, "system:serviceaccount:"+testNamespace+":kube-fip-operator-cleanup'") {
			t.Errorf("%s does not exempt the operator and the uninstall hook: %+v", w.Name, w.MatchConditions)
		}
		if w.SideEffects == nil || *w.SideEffects != admissionregistrationv1.SideEffectClassNone {
			t.Errorf("%s sideEffects %v, want None", w.Name, w.SideEffects)
		}
	}
	var svc corev1.Service
	convert(t, find(t, objs, "Service", "kube-fip-operator-webhook"), &svc)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.String() != "webhook" {
		t.Errorf("webhook Service ports %+v", svc.Spec.Ports)
	}
	_, c := renderDeployment(t, nil)
	if flagValues(c.Args)["webhook-port"] != "9443" {
		t.Errorf("the operator is not told to serve the webhook on 9443: %q", c.Args)
	}

	off := map[string]interface{}{"webhook": map[string]interface{}{"enabled": false}}
	for _, o := range renderOperator(t, off) {
		if o.GetKind() == "ValidatingWebhookConfiguration" || strings.Contains(o.GetName(), "webhook") {
			t.Errorf("webhook.enabled=false renders %s %s", o.GetKind(), o.GetName())
		}
	}
	if _, c := renderDeployment(t, off); flagValues(c.Args)["webhook-port"] != "" {
		t.Errorf("webhook.enabled=false still passes --webhook-port")
	}
}
