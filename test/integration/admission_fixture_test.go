package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

// webhookEnv is the operator's admission webhook as the chart deploys it, in the fixture's
// namespace: the chart's ValidatingWebhookConfiguration and Secret, rendered by Helm's renderer for
// that release namespace, with the one change a cluster without kube-proxy needs (the API server
// calls the webhook at a loopback URL instead of through the Service); and the operator running
// as the chart's ServiceAccount, which the chart's matchConditions exempt. (The ServiceAccount is
// bound to cluster-admin here; test/leastprivilege runs it under the chart's own roles.)
type webhookEnv struct {
	f          *fixture
	name       string // the ValidatingWebhookConfiguration
	port       int
	kubeconfig string
}

// newWebhookEnv installs the chart's webhook objects rendered with values, and the operator's
// ServiceAccount. Everything is removed when the test ends, before the shard is cleared, so that
// no later write is sent to a webhook that is gone.
func (f *fixture) newWebhookEnv(values map[string]interface{}) *webhookEnv {
	t := f.t
	t.Helper()
	ctx := context.Background()
	kube := f.shard.Kube
	w := &webhookEnv{f: f, name: "kube-fip-operator-" + f.ns, port: rig.FreePort(t)}

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "kube-fip-operator", Namespace: f.ns}}
	if _, err := kube.CoreV1().ServiceAccounts(f.ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: w.name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kube-fip-operator", Namespace: f.ns}},
	}
	rig.Must(t, ignoreExists(kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})))
	w.kubeconfig = filepath.Join(t.TempDir(), "operator.kubeconfig")
	rig.Must(t, controlplane.ServiceAccountKubeconfig(f.shard.Env.Config, f.ns, "kube-fip-operator", w.kubeconfig, time.Hour))

	f.shard.InstallWebhook(t, f.ns, w.name, w.port, values)
	t.Cleanup(func() { _ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, w.name, metav1.DeleteOptions{}) })
	return w
}

func ignoreExists[T any](_ T, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// start runs the operator as the chart's ServiceAccount; with serve it serves the webhook on the
// env's port, and it returns once the API server's calls reach it (its CA is in the configuration
// and a range write is judged).
func (w *webhookEnv) start(serve bool, extra ...string) *controlplane.Process {
	t := w.f.t
	t.Helper()
	p := w.launch(serve, extra...)
	rig.Must(t, p.WaitForLog(context.Background(), "controllers running", time.Minute))
	if serve {
		w.waitServing()
	}
	return p
}

// launch starts the operator as start does, without waiting for anything.
func (w *webhookEnv) launch(serve bool, extra ...string) *controlplane.Process {
	t := w.f.t
	t.Helper()
	var args []string
	if serve {
		args = append(args, "--webhook-port", fmt.Sprint(w.port), "--webhook-hosts", "127.0.0.1", "--webhook-configuration", w.name)
	}
	args = append(append(args, controlplane.LoopbackChartSourceArgs()...), extra...)
	return startOperatorAs(t, w.kubeconfig, w.f.ns, rig.FreePort(t), args...)
}

// waitServing waits until the API server's calls reach the webhook.
func (w *webhookEnv) waitServing() {
	w.f.t.Helper()
	rig.Eventually(w.f.t, 30*time.Second, "the API server to reach the webhook", func() bool {
		return w.judged() == nil
	})
}

// judged sends the API server a dry-run create of a range that overlaps nothing, and returns
// its error: nil once the webhook answers (the range rule fails closed, so an unreachable webhook
// or an untrusted certificate is an error).
func (w *webhookEnv) judged() error {
	r := rangeObject("webhook-probe", "198.18.255.0/30", "harv-probe-"+w.f.ns)
	return w.f.shard.DryRunCreateRange(r)
}

// rangeObject is a range of cidr on Harvester cluster display's network vlan10.
func rangeObject(name, cidr, display string) *v1.FloatingIPRange {
	return &v1.FloatingIPRange{
		TypeMeta: metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "FloatingIPRange"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			v1.AnnotationHarvesterClusterName: display,
			v1.AnnotationHarvesterNetworkName: "vlan10",
		}},
		Spec: v1.FloatingIPRangeSpec{IPRange: cidr},
	}
}

// allowHere lets the fixture's namespace, which belongs to no guest cluster, take addresses of a
// range.
func (f *fixture) allowHere(s *v1.FloatingIPRangeSpec) {
	s.AllowedNamespaces = append(s.AllowedNamespaces, f.ns)
}
