package helminstall

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/pkg/redact"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
)

// The environment through which kube-vip-cloud-provider is told which ConfigMap to read; unset, it
// reads kube-system/kubevip.
const (
	ProviderNamespaceEnv = "KUBEVIP_NAMESPACE"
	ProviderConfigMapEnv = "KUBEVIP_CONFIG_MAP"
)

// ErrProviderNotFound means the release holds no kube-vip-cloud-provider Deployment (yet).
var ErrProviderNotFound = errors.New("no kube-vip-cloud-provider Deployment in the release")

// ProviderConfigMap finds where the kube-vip-cloud-provider of release namespace/name reads its
// address pools: the Deployment the release installed, as it runs now, and its container's
// KUBEVIP_NAMESPACE and KUBEVIP_CONFIG_MAP. Chart generations differ: before 0.2.3 the chart sets
// neither (kube-system/kubevip), 0.2.3 sets <release namespace>/<name>-cm, later ones take the name
// from the configMapName value.
func (in *Installer) ProviderConfigMap(ctx context.Context, c *guest.Client, namespace, name string) (kubevipconfig.ConfigMapRef, error) {
	history, err := storage.Init(newBoundedSecrets(c.Core.Secrets(namespace), namespace, name)).History(name)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return kubevipconfig.ConfigMapRef{}, fmt.Errorf("reading release %s/%s: %w", namespace, name, err)
	}
	var rel *release.Release
	for _, r := range history {
		if r.Info != nil && r.Info.Status == release.StatusDeployed && (rel == nil || r.Version > rel.Version) {
			rel = r
		}
	}
	if rel == nil {
		return kubevipconfig.ConfigMapRef{}, fmt.Errorf("release %s/%s is not deployed: %w", namespace, name, ErrProviderNotFound)
	}
	if err := owns(namespace, name, string(guestchart.CloudProvider), rel); err != nil {
		return kubevipconfig.ConfigMapRef{}, err
	}
	for _, doc := range releaseutil.SplitManifests(rel.Manifest) {
		var head struct {
			metav1.TypeMeta   `json:",inline"`
			metav1.ObjectMeta `json:"metadata"`
		}
		if yaml.Unmarshal([]byte(doc), &head) != nil || head.APIVersion != "apps/v1" || head.Kind != "Deployment" {
			continue
		}
		ns := head.Namespace
		if ns == "" {
			ns = namespace
		}
		d, err := c.Apps.Deployments(ns).Get(ctx, head.Name, metav1.GetOptions{})
		if err != nil {
			return kubevipconfig.ConfigMapRef{}, fmt.Errorf("reading the provider Deployment %s/%s: %w", ns, head.Name, err)
		}
		// Only a Deployment Helm made for this release: a record read from a guest may name any.
		if d.Annotations["meta.helm.sh/release-name"] != name || d.Annotations["meta.helm.sh/release-namespace"] != namespace {
			return kubevipconfig.ConfigMapRef{}, fmt.Errorf("the Deployment %s/%s that release %s/%s names is not the release's own: %w",
				ns, head.Name, namespace, name, ErrProviderNotFound)
		}
		return providerConfigMapOf(d, namespace)
	}
	return kubevipconfig.ConfigMapRef{}, fmt.Errorf("release %s/%s: %w", namespace, name, ErrProviderNotFound)
}

// providerConfigMapOf reads the provider's environment, with its defaults for what is unset. The
// answer must be a ConfigMap a provider chart generation reads: kube-system/kubevip (before 0.2.3,
// and what the original operator wrote), or in the release's namespace kubevip (what the operator
// sets since 0.2.4) or kube-vip-cloud-provider-cm (0.2.3). The operator writes only there: a
// Deployment that names any other ConfigMap would send its address pool into someone else's
// object.
func providerConfigMapOf(d *appsv1.Deployment, namespace string) (kubevipconfig.ConfigMapRef, error) {
	ref := kubevipconfig.DefaultConfigMap()
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			switch {
			case e.Name == ProviderNamespaceEnv && e.Value != "":
				ref.Namespace = e.Value
			case e.Name == ProviderConfigMapEnv && e.Value != "":
				ref.Name = e.Value
			}
		}
	}
	var names []string
	for _, ok := range ProviderConfigMaps(namespace) {
		if ref == ok {
			return ref, nil
		}
		names = append(names, ok.String())
	}
	return kubevipconfig.ConfigMapRef{}, fmt.Errorf("the provider Deployment %s/%s reads %s, which is none of the ConfigMaps the operator writes (%s): %w",
		d.Namespace, d.Name, redact.Shorten(ref.String(), 2*maxChartName), strings.Join(names, ", "), ErrProviderNotFound)
}

// ProviderConfigMaps are the ConfigMaps a provider the operator installed into namespace reads,
// chart generation by generation.
func ProviderConfigMaps(namespace string) []kubevipconfig.ConfigMapRef {
	return []kubevipconfig.ConfigMapRef{
		kubevipconfig.DefaultConfigMap(),
		{Namespace: namespace, Name: kubevipconfig.KubevipConfigMap},
		{Namespace: namespace, Name: string(guestchart.CloudProvider) + "-cm"},
	}
}
