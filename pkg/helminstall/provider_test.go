package helminstall

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestProviderConfigMapIsOneTheOperatorWrites: the operator writes its pool where the installed
// provider reads only when that is a ConfigMap a provider chart generation reads; a Deployment
// that names any other (another namespace's, someone else's object) is refused.
func TestProviderConfigMapIsOneTheOperatorWrites(t *testing.T) {
	t.Parallel()
	deployment := func(env ...string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-vip-system", Name: "kube-vip-cloud-provider"}}
		c := corev1.Container{Name: "kube-vip-cloud-provider"}
		for i := 0; i < len(env); i += 2 {
			c.Env = append(c.Env, corev1.EnvVar{Name: env[i], Value: env[i+1]})
		}
		d.Spec.Template.Spec.Containers = []corev1.Container{c}
		return d
	}
	for _, c := range []struct {
		name string
		d    *appsv1.Deployment
		want string
	}{
		{"no environment (before 0.2.3)", deployment(), "kube-system/kubevip"},
		{"0.2.3", deployment(ProviderNamespaceEnv, "kube-vip-system", ProviderConfigMapEnv, "kube-vip-cloud-provider-cm"), "kube-vip-system/kube-vip-cloud-provider-cm"},
		{"0.2.4 and later", deployment(ProviderNamespaceEnv, "kube-vip-system", ProviderConfigMapEnv, "kubevip"), "kube-vip-system/kubevip"},
		{"someone else's ConfigMap", deployment(ProviderNamespaceEnv, "kube-system", ProviderConfigMapEnv, "coredns"), ""},
		{"another namespace", deployment(ProviderNamespaceEnv, "tenant-a", ProviderConfigMapEnv, "kubevip"), ""},
	} {
		ref, err := providerConfigMapOf(c.d, "kube-vip-system")
		switch {
		case c.want == "" && (err == nil || !errors.Is(err, ErrProviderNotFound)):
			t.Errorf("%s: %v, %v; want a refusal", c.name, ref, err)
		case c.want != "" && (err != nil || ref.String() != c.want):
			t.Errorf("%s: %v, %v; want %s", c.name, ref, err, c.want)
		}
	}
}
