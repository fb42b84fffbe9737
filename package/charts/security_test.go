package charts

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartsource"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
)

// flagValues returns the container's --name=value arguments.
func flagValues(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		if k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok {
			out[k] = v
		}
	}
	return out
}

// securitySettings are the deployment's security settings as the chart renders them with values
// into the Secret kube-fip-operator-security, read as the operator reads them.
func securitySettings(t *testing.T, values map[string]interface{}) installpolicy.Deployment {
	t.Helper()
	var secret corev1.Secret
	convert(t, find(t, renderOperator(t, values), "Secret", "kube-fip-operator-security"), &secret)
	d, err := installpolicy.ParseDeployment(secret.Data)
	if err != nil {
		t.Fatalf("the operator refuses the chart's security Secret: %v", err)
	}
	return d
}

// TestChartSecuritySettings: the chart passes security.* to the operator in the Secret
// kube-fip-operator-security, which the Deployment names and whose checksum rolls its pods, so
// that the allow-list is set at deployment level and none of it is a flag; by default they are the
// upstream kube-vip sources and images over https, and the operator accepts what the chart renders.
func TestChartSecuritySettings(t *testing.T) {
	d, c := renderDeployment(t, nil)
	flags := flagValues(c.Args)
	if flags["security-secret"] != "kube-fip-operator-security" {
		t.Errorf("--security-secret=%q; want kube-fip-operator-security", flags["security-secret"])
	}
	for name := range flags {
		if strings.HasPrefix(name, "allow") || name == "chart-credentials-secret" {
			t.Errorf("the chart passes --%s: the security settings are in the Secret alone", name)
		}
	}
	sum := d.Spec.Template.Annotations["checksum/security"]
	settings := securitySettings(t, nil)
	want := installpolicy.Deployment{
		ChartSources: strings.Join(chartsource.DefaultChartSources(), ","), KubevipImages: strings.Join(imagepolicy.DefaultKubevipImages(), ","),
		CloudProviderImages: strings.Join(imagepolicy.DefaultCloudProviderImages(), ","), Namespaces: "kube-system",
	}
	if settings != want {
		t.Errorf("default security settings %+v; want %+v", settings, want)
	}
	if _, err := installpolicy.New(settings.Apply(installpolicy.Settings{})); err != nil {
		t.Errorf("the operator refuses the default settings: %v", err)
	}

	// A comma-separated string works as well as a list (the Rancher form sets strings).
	kubevip, provider := "kube-vip@sha256:"+strings.Repeat("ab", 32), "kube-vip-cloud-provider@sha256:"+strings.Repeat("cd", 32)
	wider := map[string]interface{}{"security": map[string]interface{}{
		"allowedChartDigests":    []interface{}{kubevip, provider},
		"allowedChartSources":    "https://charts.corp.example/kube-vip,http://mirror.corp.example:8080",
		"allowHTTPChartSources":  true,
		"allowedImages":          map[string]interface{}{"kubevip": []interface{}{"registry.corp.example/kube-vip"}},
		"chartCredentialsSecret": "chart-pull",
		"kubevipModes":           []interface{}{"bgp", "dhcp"},
		"allowedGuestNamespaces": []interface{}{"kube-system", "kube-vip"},
	}}
	settings = securitySettings(t, wider)
	want = installpolicy.Deployment{
		ChartSources: "https://charts.corp.example/kube-vip,http://mirror.corp.example:8080", AllowHTTP: true,
		KubevipImages: "registry.corp.example/kube-vip", CloudProviderImages: strings.Join(imagepolicy.DefaultCloudProviderImages(), ","),
		ChartDigests: kubevip + "," + provider, KubevipModes: "bgp,dhcp",
		Namespaces: "kube-system,kube-vip", ChartCredentialsSecret: "chart-pull",
	}
	if settings != want {
		t.Errorf("security settings %+v; want %+v", settings, want)
	}
	if _, err := installpolicy.New(settings.Apply(installpolicy.Settings{})); err != nil {
		t.Errorf("the operator refuses the settings: %v", err)
	}
	if d, _ := renderDeployment(t, wider); d.Spec.Template.Annotations["checksum/security"] == sum || sum == "" {
		t.Errorf("checksum/security %q is the same for other security settings: the pods would not roll", sum)
	}
	// The replaced allowedImagePrefixes stops the install with a message, unless it is its old
	// default (which Rancher keeps in the values of an upgraded release).
	if _, err := renderRelease(t, map[string]interface{}{"security": map[string]interface{}{"allowedImagePrefixes": "ghcr.io/kube-vip"}}); err == nil ||
		!strings.Contains(err.Error(), "allowedImages") {
		t.Errorf("a non-default allowedImagePrefixes renders: %v", err)
	}
	if securitySettings(t, map[string]interface{}{"security": map[string]interface{}{"allowedImagePrefixes": "ghcr.io/kube-vip,docker.io/plndr,docker.io/kubevip"}}).KubevipImages !=
		strings.Join(imagepolicy.DefaultKubevipImages(), ",") {
		t.Error("the old default allowedImagePrefixes changes the images")
	}
	// An empty list allows nothing; it does not fall back to the defaults.
	if v := securitySettings(t, map[string]interface{}{"security": map[string]interface{}{"allowedChartSources": []interface{}{}}}).ChartSources; v != "" {
		t.Errorf("empty allowedChartSources renders %q", v)
	}
}

// TestChartCredentialsSecretRBAC: the operator may read the chart credentials Secret, and only
// that one, in its namespace; besides it, only the security settings' Secret and the webhook's
// certificate Secret, by name.
func TestChartCredentialsSecretRBAC(t *testing.T) {
	secretRules := func(values map[string]interface{}) []string {
		var role rbacv1.Role
		convert(t, find(t, renderOperator(t, values), "Role", "kube-fip-operator"), &role)
		var out []string
		for _, g := range grants(role.Rules) {
			if strings.HasPrefix(g, " secrets ") {
				out = append(out, g)
			}
		}
		return out
	}
	security := " secrets get name=kube-fip-operator-security"
	webhook := []string{security, " secrets get name=kube-fip-operator-webhook-tls", " secrets update name=kube-fip-operator-webhook-tls"}
	if rules := secretRules(nil); strings.Join(rules, "\n") != strings.Join(webhook, "\n") {
		t.Errorf("Secret grants without a credentials Secret: %q; want the webhook certificate's and the security settings' only", rules)
	}
	if rules := secretRules(map[string]interface{}{"webhook": map[string]interface{}{"enabled": false}}); strings.Join(rules, "\n") != security {
		t.Errorf("Secret grants without a credentials Secret or the webhook: %q; want the security settings' only", rules)
	}
	rules := secretRules(map[string]interface{}{"security": map[string]interface{}{"chartCredentialsSecret": "chart-pull"}})
	want := append([]string{" secrets get name=chart-pull"}, webhook...)
	if strings.Join(rules, "\n") != strings.Join(want, "\n") {
		t.Errorf("Secret grants %q; want get on chart-pull and the webhook certificate's", rules)
	}
}

// TestGuestImageFlagsAndRBAC: the form's registry (else Rancher's), the digest switch (on by
// default, only with a registry), the pull Secret and plain http reach the operator as flags; the
// operator may read the pull Secret by name, besides the Secrets it read before.
func TestGuestImageFlagsAndRBAC(t *testing.T) {
	for _, c := range []struct {
		values map[string]interface{}
		want   map[string]string
	}{
		{nil, map[string]string{"require-image-digests": "false", "guest-image-registry-plain-http": "false"}},
		{map[string]interface{}{"global": map[string]interface{}{"cattle": map[string]interface{}{"systemDefaultRegistry": "registry.example.com:5000"}}},
			map[string]string{"guest-image-registry": "registry.example.com:5000", "require-image-digests": "true", "guest-image-registry-plain-http": "false"}},
		{map[string]interface{}{"global": map[string]interface{}{"cattle": map[string]interface{}{"systemDefaultRegistry": "registry.example.com:5000"}},
			"guestImages": map[string]interface{}{"registry": "mirror.example.com", "requireDigest": false, "pullSecret": "registry-pull", "plainHTTP": true}},
			map[string]string{"guest-image-registry": "mirror.example.com", "require-image-digests": "false", "guest-image-pull-secret": "registry-pull",
				"guest-image-registry-plain-http": "true"}},
	} {
		_, ctr := renderDeployment(t, c.values)
		flags := flagValues(ctr.Args)
		for _, name := range []string{"guest-image-registry", "require-image-digests", "guest-image-pull-secret", "guest-image-registry-plain-http"} {
			if got, ok := flags[name]; got != c.want[name] || ok != (c.want[name] != "") {
				t.Errorf("values %v: --%s=%q (present %t); want %q", c.values, name, got, ok, c.want[name])
			}
		}
	}
	var role rbacv1.Role
	convert(t, find(t, renderOperator(t, map[string]interface{}{"guestImages": map[string]interface{}{"pullSecret": "registry-pull"}}), "Role", "kube-fip-operator"), &role)
	var secrets []string
	for _, g := range grants(role.Rules) {
		if strings.HasPrefix(g, " secrets ") {
			secrets = append(secrets, g)
		}
	}
	want := []string{" secrets get name=kube-fip-operator-security", " secrets get name=kube-fip-operator-webhook-tls", " secrets get name=registry-pull",
		" secrets update name=kube-fip-operator-webhook-tls"}
	if strings.Join(secrets, "\n") != strings.Join(want, "\n") {
		t.Errorf("Secret grants %q; want get on the pull Secret by name and the webhook certificate's", secrets)
	}
}

// TestHelmCacheSizeLimit: the emptyDir holding Helm's caches has a size limit, so a large chart
// or index cannot fill the node's disk.
func TestHelmCacheSizeLimit(t *testing.T) {
	for _, tt := range []struct {
		values map[string]interface{}
		want   string
	}{
		{nil, "256Mi"},
		{map[string]interface{}{"helmCacheSizeLimit": "1Gi"}, "1Gi"},
	} {
		d, _ := renderDeployment(t, tt.values)
		found := false
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name != "tmp" {
				continue
			}
			found = true
			if v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Cmp(resource.MustParse(tt.want)) != 0 {
				t.Errorf("tmp volume %+v; want an emptyDir with sizeLimit %s", v.VolumeSource, tt.want)
			}
		}
		if !found {
			t.Error("no tmp volume")
		}
	}
}
