package suite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubefip/kube-fip-operator/pkg/admission"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// WebhookSecret is the Secret the chart creates for the webhook's certificate.
const WebhookSecret = "kube-fip-operator-webhook-tls"

// SecuritySecret is the Secret the chart writes the deployment's security settings to, which the
// operator reads when --security-secret names it.
const SecuritySecret = "kube-fip-operator-security"

// InstallWebhook creates the operator chart's webhook Secret, its security settings' Secret
// (SecuritySecret) and its ValidatingWebhookConfiguration,
// rendered by Helm's renderer for release namespace ns with values, the configuration named name
// and pointed at https://127.0.0.1:port — the one change a cluster without kube-proxy needs, where
// the chart names its Service. The webhooks named in leaveOut are left out. The configuration is
// deleted when the test ends.
func (s *Suite) InstallWebhook(t testing.TB, ns, name string, port int, values map[string]interface{}, leaveOut ...string) {
	t.Helper()
	ctx := context.Background()
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	var secret, security corev1.Secret
	for _, o := range chartrepo.RenderOperatorChart(t, ns, values) {
		var err error
		switch {
		case o.GetKind() == "ValidatingWebhookConfiguration":
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &vwc)
		case o.GetKind() == "Secret" && o.GetName() == WebhookSecret:
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &secret)
		case o.GetKind() == "Secret" && o.GetName() == SecuritySecret:
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &security)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(vwc.Webhooks) == 0 || secret.Name == "" || security.Name == "" {
		t.Fatalf("the chart rendered no webhook configuration, certificate Secret or security settings' Secret")
	}
	vwc.Name = name
	kept := vwc.Webhooks[:0]
	for _, w := range vwc.Webhooks {
		if !slices.Contains(leaveOut, w.Name) {
			kept = append(kept, w)
		}
	}
	vwc.Webhooks = kept
	pointAt(&vwc, port)
	for _, o := range []*corev1.Secret{&secret, &security} {
		if _, err := s.Kube.CoreV1().Secrets(ns).Create(ctx, o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	vwcs := s.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := vwcs.Create(ctx, &vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vwcs.Delete(ctx, name, metav1.DeleteOptions{}) })
}

// DryRunCreateRange asks the API server to create r without storing it: admission runs in full.
func (s *Suite) DryRunCreateRange(r *v1.FloatingIPRange) error {
	return DryRunCreateRangeIn(s.Env.Config, r)
}

// DryRunCreateRangeIn is DryRunCreateRange against the API server of cfg.
func DryRunCreateRangeIn(cfg *rest.Config, r *v1.FloatingIPRange) error {
	r = r.DeepCopy()
	r.APIVersion, r.Kind = v1.SchemeGroupVersion.String(), "FloatingIPRange"
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(r)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = dyn.Resource(v1.SchemeGroupVersion.WithResource("floatingipranges")).
		Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// PointWebhookAt sends the API server of kube to the webhook at https://127.0.0.1:port instead of
// the Service the installed chart names in ValidatingWebhookConfiguration name: the one change an
// API server without kube-proxy needs.
func PointWebhookAt(t testing.TB, kube kubernetes.Interface, name string, port int) {
	t.Helper()
	vwcs := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	vwc, err := vwcs.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pointAt(vwc, port)
	if _, err := vwcs.Update(context.Background(), vwc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// pointAt makes every webhook of vwc call https://127.0.0.1:port instead of its Service, keeping
// its caBundle.
func pointAt(vwc *admissionregistrationv1.ValidatingWebhookConfiguration, port int) {
	url := fmt.Sprintf("https://127.0.0.1:%d%s", port, admission.Path)
	for i := range vwc.Webhooks {
		vwc.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: vwc.Webhooks[i].ClientConfig.CABundle}
	}
}

// RefusedBecause reports whether err is the webhook's refusal with a message containing every
// one of parts.
func RefusedBecause(err error, parts ...string) bool {
	if err == nil || !strings.Contains(err.Error(), "denied the request") {
		return false
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			return false
		}
	}
	return true
}
