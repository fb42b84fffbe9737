package guestcluster

import (
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubefip/kube-fip-operator/pkg/charts"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// TestRenderedObjectsAreJudged: what the chart renders is judged, not what the values asked: the
// injections that the kube-vip chart 0.9.9 prints unquoted (image.pullPolicy, priorityClassName)
// render a second container, hostPID and a hostPath volume, and each is refused by object and
// field even when the values reach Helm; the charts as the operator installs them pass.
func TestRenderedObjectsAreJudged(t *testing.T) {
	cases := []struct{ name, values, want string }{
		{"a second container through image.pullPolicy",
			"image:\n  pullPolicy: \"IfNotPresent\\n        - name: kv\\n          image: docker.io/library/alpine:3.20\"\n",
			"2 containers"},
		{"hostPID and a hostPath volume through priorityClassName",
			"priorityClassName: \"system-node-critical\\n      hostPID: true\\n      volumes: [{name: host, hostPath: {path: /}}]\"\n",
			"hostPID"},
		{"an image outside the allowed prefixes", "image:\n  repository: docker.io/attacker/kube-vip\n  tag: v1.0.0\n",
			"docker.io/attacker/kube-vip:v1.0.0 is not under"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := renderKubevip(t, c.values, judged())
			var refused *renderRefusal
			if !errors.As(err, &refused) || !strings.Contains(refused.Error(), c.want) ||
				!strings.Contains(refused.Error(), "DaemonSet kube-system/"+KubevipNameOverride) {
				t.Fatalf("rendered with %q: %v; want a refusal of the DaemonSet saying %q", c.values, err, c.want)
			}
		})
	}
	// The provider chart as installed passes its own policy; kube-vip's policy refuses it.
	cfg := config.Default()
	rel := release(cfg, cfg.KubevipCloudProvider, "kube-vip-cloud-provider")
	provider := chartrepo.KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion)
	own := newRenderPolicy("kube-vip-cloud-provider", "kube-system", config.DefaultPolicy(), nil)
	if _, err := charts.Render(provider, charts.RenderOptions{ReleaseName: rel.Name, Namespace: rel.Namespace, Values: rel.Values,
		PostRenderer: guest.Judged{Judge: own.judge, Done: own.done}}); err != nil {
		t.Errorf("the provider chart as installed: %v", err)
	}
	if _, err := charts.Render(provider, charts.RenderOptions{ReleaseName: rel.Name, Namespace: rel.Namespace, Values: rel.Values,
		PostRenderer: judged()}); err == nil || !strings.Contains(err.Error(), "creates no Deployment") {
		t.Errorf("the provider chart under kube-vip's policy: %v; want its Deployment refused", err)
	}
}

// TestRenderPolicyRBAC: the charts' roles and bindings pass; a binding to another role (say
// cluster-admin), to a user, or a role over every resource is refused.
func TestRenderPolicyRBAC(t *testing.T) {
	p := newRenderPolicy("kube-vip", "kube-system", config.DefaultPolicy(), nil)
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: KubevipNameOverride, Namespace: "kube-system"}
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: KubevipNameOverride}
	meta := metav1.ObjectMeta{Name: KubevipNameOverride}
	cases := []struct {
		name string
		obj  runtime.Object
		want string // "" allowed
	}{
		{"the chart's binding", &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: []rbacv1.Subject{sa}}, ""},
		{"a binding to cluster-admin", &rbacv1.ClusterRoleBinding{ObjectMeta: meta,
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: []rbacv1.Subject{sa}}, "roleRef ClusterRole cluster-admin"},
		{"a binding to a user", &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: ref,
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "mallory"}}}, "subject User"},
		{"a binding to another namespace's account", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: KubevipNameOverride, Namespace: "kube-system"},
			RoleRef: ref, Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "x", Namespace: "default"}}}, "not a ServiceAccount of the release"},
		{"a role over everything", &rbacv1.ClusterRole{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get"}}}}, "wildcard"},
		{"an object in another namespace", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}}, "namespace default is not the release's"},
		{"a kind the chart never creates", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "kube-system"}}, "not a kind the chart creates"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gvk := c.obj.GetObjectKind().GroupVersionKind()
			kinds, _, err := scheme.Scheme.ObjectKinds(c.obj)
			if err == nil {
				gvk = kinds[0]
			}
			err = p.judge(gvk.GroupVersion().String(), gvk.Kind, c.obj)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%v; want a refusal saying %q", err, c.want)
			}
		})
	}
}

// TestRenderPolicyBindsOnlyItsOwnRoles: a binding that keeps the name rule but names a role the
// release does not render (a ClusterRoleBinding cluster-admin of the ClusterRole cluster-admin) is
// refused once the release is seen whole; the chart's own role and binding pass.
func TestRenderPolicyBindsOnlyItsOwnRoles(t *testing.T) {
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: KubevipNameOverride, Namespace: "kube-system"}
	judgeAll := func(objs ...runtime.Object) error {
		p := newRenderPolicy("kube-vip", "kube-system", config.DefaultPolicy(), nil)
		for _, o := range objs {
			kinds, _, err := scheme.Scheme.ObjectKinds(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.judge(kinds[0].GroupVersion().String(), kinds[0].Kind, o); err != nil {
				return err
			}
		}
		return p.done()
	}
	own := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: KubevipNameOverride}}
	ownBinding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: KubevipNameOverride},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: KubevipNameOverride}, Subjects: []rbacv1.Subject{sa}}
	if err := judgeAll(ownBinding, own); err != nil {
		t.Errorf("the chart's role and binding, binding first: %v", err)
	}
	admin := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: []rbacv1.Subject{sa}}
	if err := judgeAll(own, ownBinding, admin); err == nil || !strings.Contains(err.Error(), "roleRef ClusterRole cluster-admin is not a role the release creates") {
		t.Errorf("a binding of cluster-admin named cluster-admin: %v; want it refused", err)
	}
	viaRoleBinding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "admin", Namespace: "kube-system"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"}, Subjects: []rbacv1.Subject{sa}}
	if err := judgeAll(viaRoleBinding); err == nil || !strings.Contains(err.Error(), "roleRef ClusterRole admin is not a role") {
		t.Errorf("a RoleBinding of the ClusterRole admin named admin: %v; want it refused", err)
	}
}

// TestRenderPolicyProviderRunsUnprivileged: the provider's one container may not ask for a host
// port or to run as root, which kube-vip-cloud-provider's chart never does.
func TestRenderPolicyProviderRunsUnprivileged(t *testing.T) {
	root := int64(0)
	for name, change := range map[string]func(*corev1.Container){
		"hostPort":    func(c *corev1.Container) { c.Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}} },
		"runAsUser 0": func(c *corev1.Container) { c.SecurityContext = &corev1.SecurityContext{RunAsUser: &root} },
	} {
		t.Run(name, func(t *testing.T) {
			c := corev1.Container{Name: "provider", Image: "docker.io/kubevip/kube-vip-cloud-provider:v0.0.12"}
			change(&c)
			p := newRenderPolicy("kube-vip-cloud-provider", "kube-system", config.DefaultPolicy(), nil)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "kube-vip-cloud-provider", Namespace: "kube-system"}}
			d.Spec.Template.Spec.Containers = []corev1.Container{c}
			if err := p.judge("apps/v1", "Deployment", d); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%v; want a refusal naming %s", err, name)
			}
		})
	}
}
