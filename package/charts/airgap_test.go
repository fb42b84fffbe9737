package charts_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kubefip/kube-fip-operator/package/charts"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/render"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// This file is an external test package: it sends the chart's own rendering through the
// operator's code (pkg/config, pkg/installpolicy) and the pinned stand-in charts
// (test/rig/chartrepo, which imports this package).

const (
	rancherRegistry = "registry.corp.example:5000"
	formRegistry    = "mirror.corp.example/airgap"
)

// rendered is everything an install of the operator chart with values creates, hooks included.
func rendered(t *testing.T, values map[string]interface{}) []*unstructured.Unstructured {
	t.Helper()
	install := action.NewInstall(&action.Configuration{Log: func(string, ...interface{}) {}})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = charts.OperatorChart, "kube-fip"
	install.APIVersions = charts.InstallAPIVersions()
	kv, err := chartutil.ParseKubeVersion(charts.MinKubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	install.KubeVersion = kv
	rel, err := install.Run(chartrepo.RepoChart(t, charts.OperatorChart), values)
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{rel.Manifest}
	for _, h := range rel.Hooks {
		docs = append(docs, h.Manifest)
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(strings.Join(docs, "\n---\n"), "\n---") {
		obj := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
	return out
}

// podSpecs are the pod specs of every workload in objs, by kind/name.
func podSpecs(t *testing.T, objs []*unstructured.Unstructured) map[string]corev1.PodSpec {
	t.Helper()
	out := map[string]corev1.PodSpec{}
	for _, o := range objs {
		raw, found, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
		if !found {
			continue
		}
		var spec corev1.PodSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
			t.Fatal(err)
		}
		out[o.GetKind()+"/"+o.GetName()] = spec
	}
	return out
}

// images are the images of every container of specs.
func images(specs map[string]corev1.PodSpec) map[string]string {
	out := map[string]string{}
	for where, s := range specs {
		for _, c := range append(append([]corev1.Container{}, s.InitContainers...), s.Containers...) {
			out[where+" "+c.Name] = c.Image
		}
	}
	return out
}

// guestImages are the images the operator, as the chart deploys it, sends to a guest: its flags
// and security Secret made into the install policy as main.go makes it, the kube-fip-config the
// chart renders read as the operator reads it, both charts planned and approved with the pinned
// stand-ins.
func guestImages(t *testing.T, objs []*unstructured.Unstructured) (map[string]string, installpolicy.Policy) {
	t.Helper()
	flags := map[string]string{}
	var cfgData map[string]string
	var security installpolicy.Deployment
	for _, o := range objs {
		switch {
		case o.GetKind() == "Secret" && o.GetName() == "kube-fip-operator-security":
			var secret corev1.Secret
			err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &secret)
			if err == nil {
				security, err = installpolicy.ParseDeployment(secret.Data)
			}
			if err != nil {
				t.Fatalf("the operator refuses the chart's security Secret: %v", err)
			}
		case o.GetKind() == "Deployment" && o.GetName() == "kube-fip-operator":
			spec := podSpecs(t, []*unstructured.Unstructured{o})["Deployment/kube-fip-operator"]
			for _, a := range spec.Containers[0].Args {
				if k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok {
					flags[k] = v
				}
			}
		case o.GetKind() == "ConfigMap" && o.GetName() == config.ConfigMapName:
			cfgData, _, _ = unstructured.NestedStringMap(o.Object, "data")
		}
	}
	policy, err := installpolicy.New(security.Apply(installpolicy.Settings{
		Registry:      flags["guest-image-registry"],
		RequireDigest: flags["require-image-digests"] == "true",
		PullSecret:    flags["guest-image-pull-secret"] != "",
	}))
	if err != nil {
		t.Fatalf("the operator refuses the chart's flags %v: %v", flags, err)
	}
	cfg, problems := config.Parse(cfgData, config.Default())
	if len(problems) > 0 {
		t.Fatalf("kube-fip-config as the chart renders it: %v", problems)
	}
	out := map[string]string{}
	for _, step := range []struct {
		plan func(config.Config) (*installpolicy.Plan, error)
	}{{policy.PlanKubevip}, {policy.PlanCloudProvider}} {
		plan, err := step.plan(cfg)
		if err != nil {
			t.Fatalf("the operator refuses kube-fip-config as the chart renders it: %v", err)
		}
		ch := chartrepo.KubevipChart(config.DefaultKubevipChartVersion)
		if plan.Chart == guestchart.CloudProvider {
			ch = chartrepo.KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion)
		}
		a, err := plan.Approve(ch, render.Target{Name: string(plan.Chart), Namespace: cfg.KubevipNamespace, Revision: 1})
		if err != nil {
			t.Fatalf("%s: %v", plan.Chart, err)
		}
		var objs []*unstructured.Unstructured
		for _, doc := range strings.Split(a.Manifest, "---\n") {
			obj := map[string]interface{}{}
			if err := yaml.Unmarshal([]byte(doc), &obj); err == nil && len(obj) > 0 {
				objs = append(objs, &unstructured.Unstructured{Object: obj})
			}
		}
		for where, image := range images(podSpecs(t, objs)) {
			out[string(plan.Chart)+": "+where] = image
		}
	}
	if len(out) != 2 {
		t.Fatalf("the approved guest workloads run %v; want one container each", out)
	}
	return out, policy
}

// TestEveryImageCarriesTheRegistry: every image the chart renders (the operator's Deployment and
// its clean-up hook) carries Rancher's system default registry when it is set, and none when it is
// not; every guest image the operator sends carries the form's registry, else Rancher's, pinned by
// digest, and none when neither is set.
func TestEveryImageCarriesTheRegistry(t *testing.T) {
	for _, c := range []struct {
		name                    string
		values                  map[string]interface{}
		operatorPrefix, guestPx string
	}{
		{"no registry", nil, "", ""},
		{"Rancher's system default registry", map[string]interface{}{
			"global": map[string]interface{}{"cattle": map[string]interface{}{"systemDefaultRegistry": rancherRegistry}}},
			rancherRegistry + "/", rancherRegistry + "/"},
		{"the form's registry over Rancher's", map[string]interface{}{
			"global":      map[string]interface{}{"cattle": map[string]interface{}{"systemDefaultRegistry": rancherRegistry}},
			"guestImages": map[string]interface{}{"registry": formRegistry, "pullSecret": "registry-pull"}},
			rancherRegistry + "/", formRegistry + "/"},
		{"the form's registry alone", map[string]interface{}{"guestImages": map[string]interface{}{"registry": formRegistry}},
			"", formRegistry + "/"},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs := rendered(t, c.values)
			chartImages := images(podSpecs(t, objs))
			if _, ok := chartImages["Job/kube-fip-operator-cleanup cleanup"]; !ok || len(chartImages) < 2 {
				t.Fatalf("the chart renders %v; want the Deployment's and the clean-up Job's images at least", chartImages)
			}
			for where, image := range chartImages {
				if !strings.HasPrefix(image, c.operatorPrefix+"kubefip/kube-fip-operator:") {
					t.Errorf("%s runs %s; want %skubefip/kube-fip-operator", where, image, c.operatorPrefix)
				}
			}
			sent, policy := guestImages(t, objs)
			for where, image := range sent {
				want := map[bool]string{true: "ghcr.io/kube-vip/kube-vip:", false: "ghcr.io/kube-vip/kube-vip-cloud-provider:"}[strings.HasPrefix(where, "kube-vip:")]
				if c.guestPx != "" {
					want = c.guestPx + strings.TrimPrefix(strings.TrimPrefix(imagepolicy.PinnedRepository(chartOf(where)), "ghcr.io/"), "docker.io/") + ":"
				}
				if !strings.HasPrefix(image, want) || !strings.Contains(image, "@sha256:") {
					t.Errorf("%s: the operator sends %s; want %s<tag>@sha256:<digest>", where, image, want)
				}
				for _, other := range []string{rancherRegistry, formRegistry} {
					if c.guestPx == "" && strings.Contains(image, other) {
						t.Errorf("%s: %s is prefixed without a registry", where, image)
					}
				}
			}
			if c.guestPx != "" && !policy.Images().RequireDigest() {
				t.Error("with a registry the chart does not require digests")
			}
			if c.guestPx == "" && policy.Images().RequireDigest() {
				t.Error("without a registry the chart requires digests")
			}
		})
	}
}

func chartOf(where string) guestchart.Chart {
	if strings.HasPrefix(where, "kube-vip:") {
		return guestchart.Kubevip
	}
	return guestchart.CloudProvider
}

// TestAirGapRecipeNamesThePinnedPair: the air-gap recipe names the images the operator sends, by
// the tag and digest it pins, and where a mirror puts them; the README names the mirrored paths.
func TestAirGapRecipeNamesThePinnedPair(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "airgap.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ repository, pinned string }{
		{config.DefaultKubevipImageRepository, config.DefaultKubevipImageTag},
		{config.DefaultKubevipCloudProviderImageRepository, config.DefaultKubevipCloudProviderImageTag},
	} {
		tag, _, _ := strings.Cut(c.pinned, "@")
		mirrored := "<registry>/" + strings.SplitN(c.repository, "/", 2)[1] + ":" + tag
		for _, want := range []string{c.repository + ":" + c.pinned, mirrored} {
			if !strings.Contains(string(page), want) {
				t.Errorf("docs/airgap.md does not name %s", want)
			}
		}
		if !strings.Contains(string(readme), mirrored) {
			t.Errorf("the README's air-gap section does not name %s", mirrored)
		}
	}
}
