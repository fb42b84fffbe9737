package installpolicy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartsource"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

const testRegistry = "registry.corp.example:5000"

// defaultsOf are the operator's default values of chart.
func defaultsOf(chart guestchart.Chart) map[string]interface{} {
	if chart == guestchart.CloudProvider {
		return config.Default().KubevipCloudProvider.Values
	}
	return config.Default().Kubevip.Values
}

// renderedWorkload approves the stand-in chart with the plan and returns its workload's pod spec
// as the approved manifest holds it.
func renderedWorkload(t *testing.T, pl *Plan) (image string, pullSecrets []string) {
	t.Helper()
	a, err := pl.Approve(chartrepo.DefaultChart(pl.Chart), release())
	if err != nil {
		t.Fatalf("%s: %v", pl.Chart, err)
	}
	for _, doc := range strings.Split(a.Manifest, "---\n") {
		var ds appsv1.DaemonSet // a Deployment's template sits at the same path
		if err := yaml.Unmarshal([]byte(doc), &ds); err != nil || (ds.Kind != "DaemonSet" && ds.Kind != "Deployment") {
			continue
		}
		var d appsv1.Deployment
		if ds.Kind == "Deployment" {
			if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
				t.Fatal(err)
			}
			ds.Spec.Template = d.Spec.Template
		}
		for _, s := range ds.Spec.Template.Spec.ImagePullSecrets {
			pullSecrets = append(pullSecrets, s.Name)
		}
		return ds.Spec.Template.Spec.Containers[0].Image, pullSecrets
	}
	t.Fatalf("%s: the approved manifest has no workload", pl.Chart)
	return "", nil
}

// TestGuestImagesUnderTheRegistry: with a registry, the operator's default values send both
// charts' pinned images under it, by tag and digest, with the pull Secret it writes; the chart's
// render and the reference render hold the same image. Without one, nothing is prefixed.
func TestGuestImagesUnderTheRegistry(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		settings Settings
		want     map[guestchart.Chart]string
		pull     []string
	}{
		{"no registry", DefaultSettings(), map[guestchart.Chart]string{
			guestchart.Kubevip:       "ghcr.io/kube-vip/kube-vip:" + config.DefaultKubevipImageTag,
			guestchart.CloudProvider: "ghcr.io/kube-vip/kube-vip-cloud-provider:" + config.DefaultKubevipCloudProviderImageTag}, nil},
		{"a registry", Settings{Registry: testRegistry, RequireDigest: true, PullSecret: true}, map[guestchart.Chart]string{
			guestchart.Kubevip:       testRegistry + "/kube-vip/kube-vip:" + config.DefaultKubevipImageTag,
			guestchart.CloudProvider: testRegistry + "/kube-vip/kube-vip-cloud-provider:" + config.DefaultKubevipCloudProviderImageTag}, []string{imagepolicy.GuestPullSecretName}},
		{"a registry with a path", Settings{Registry: "registry.corp.example/mirror/"}, map[guestchart.Chart]string{
			guestchart.Kubevip:       "registry.corp.example/mirror/kube-vip/kube-vip:" + config.DefaultKubevipImageTag,
			guestchart.CloudProvider: "registry.corp.example/mirror/kube-vip/kube-vip-cloud-provider:" + config.DefaultKubevipCloudProviderImageTag}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := mustPolicy(t, c.settings)
			for _, chart := range []guestchart.Chart{guestchart.Kubevip, guestchart.CloudProvider} {
				pl, err := p.NewPlan(chart, "values", "", defaultsOf(chart), defaultsOf(chart))
				if err != nil {
					t.Fatalf("%s: %v", chart, err)
				}
				if pl.Values.Ref != c.want[chart] {
					t.Errorf("%s: the values send %q; want %q", chart, pl.Values.Ref, c.want[chart])
				}
				image, pull := renderedWorkload(t, pl)
				if image != c.want[chart] {
					t.Errorf("%s: the approved workload runs %q; want %q", chart, image, c.want[chart])
				}
				if c.settings.Registry == "" && strings.HasPrefix(image, testRegistry) {
					t.Errorf("%s: %q is prefixed without a registry", chart, image)
				}
				if strings.Join(pull, ",") != strings.Join(c.pull, ",") {
					t.Errorf("%s: imagePullSecrets %v; want %v", chart, pull, c.pull)
				}
				// The reference render, the chart with the product's defaults, holds the same image.
				docs, err := pl.policy.renders.Render(chart, chartrepo.DefaultChart(chart), pl.baseline, release(), "")
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range docs {
					var w struct {
						Spec struct{ Template corev1.PodTemplateSpec }
					}
					if err := yaml.Unmarshal([]byte(d.Content), &w); err != nil {
						t.Fatal(err)
					}
					if cs := w.Spec.Template.Spec.Containers; len(cs) > 0 && c.settings.Registry != "" && cs[0].Image != c.want[chart] {
						t.Errorf("%s: the reference render runs %q; want %q", chart, cs[0].Image, c.want[chart])
					}
				}
			}
		})
	}
}

// TestRegistryIsTheAllowList: with a registry, the allowed images are exactly the pinned
// repositories under it, whatever the image lists say; the pinned upstream repository in the
// values is moved there, a repository already under it is kept, and any other is refused.
func TestRegistryIsTheAllowList(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, Settings{Registry: testRegistry, KubevipImages: []string{"ghcr.io/kube-vip/kube-vip", "evil.example/kube-vip"}})
	if got := p.Images().String(); !strings.HasPrefix(got, "kube-vip images ["+testRegistry+"/kube-vip/kube-vip], "+
		"kube-vip-cloud-provider images ["+testRegistry+"/kube-vip/kube-vip-cloud-provider], ") {
		t.Errorf("allowed images %q; want the pinned ones under the registry only", got)
	}
	tag := "  tag: " + config.DefaultKubevipImageTag + "\n"
	for _, c := range []struct {
		repo, want string
	}{
		{"ghcr.io/kube-vip/kube-vip", testRegistry + "/kube-vip/kube-vip"},
		{testRegistry + "/kube-vip/kube-vip", testRegistry + "/kube-vip/kube-vip"},
		{"docker.io/plndr/kube-vip", ""},
		{"evil.example/kube-vip", ""},
		{"ghcr.io/kube-vip/kube-vip-iptables", ""},
		{testRegistry + "/plndr/kube-vip", ""},
		{"registry.corp.example/kube-vip/kube-vip", ""},
	} {
		pl, err := p.NewPlan(guestchart.Kubevip, "kubevipChartValues", "", chartrepo.Values(t, "image:\n  repository: "+c.repo+"\n"+tag), defaultsOf(guestchart.Kubevip))
		switch {
		case c.want == "" && (reasonOf(err) != guestchart.ReasonValuesNotAllowed || !strings.Contains(err.Error(), "image.repository")):
			t.Errorf("%s: %v; want refused naming image.repository", c.repo, err)
		case c.want != "" && (err != nil || pl.Values.Image != c.want):
			t.Errorf("%s: %v, %+v; want %s", c.repo, err, pl, c.want)
		}
	}
	// The chart's default repository (values without one) is the pinned one, moved too.
	pl, err := p.NewPlan(guestchart.CloudProvider, "kubevipCloudProviderChartValues", "", chartrepo.Values(t, "replicasCount: 2\n"), defaultsOf(guestchart.CloudProvider))
	if err != nil || pl.Values.Image != testRegistry+"/kube-vip/kube-vip-cloud-provider" {
		t.Errorf("values without an image: %v, %+v; want the pinned repository under the registry", err, pl)
	}
	if image, _ := renderedWorkload(t, pl); !strings.HasPrefix(image, testRegistry+"/kube-vip/kube-vip-cloud-provider:") {
		t.Errorf("values without an image render %q; want it under the registry", image)
	}
}

// TestDigestsRequired: with digests required, an image not pinned by one is refused naming the
// key, the chart's default tag included; a pinned one is sent as tag@digest.
func TestDigestsRequired(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, Settings{ChartSources: chartsource.DefaultChartSources(), Registry: testRegistry, RequireDigest: true})
	for _, v := range []string{
		"image:\n  repository: ghcr.io/kube-vip/kube-vip\n  tag: v1.0.0\n",
		"image:\n  repository: ghcr.io/kube-vip/kube-vip\n",
		"nodeSelector: {a: b}\n",
	} {
		_, err := p.NewPlan(guestchart.Kubevip, "kubevipChartValues", "", chartrepo.Values(t, v), defaultsOf(guestchart.Kubevip))
		if reasonOf(err) != guestchart.ReasonValuesNotAllowed || !strings.Contains(err.Error(), "image.tag must be pinned by a digest") {
			t.Errorf("%q: %v; want refused for want of a digest", v, err)
		}
	}
	if problems := p.Check(config.Default()); len(problems) != 0 {
		t.Errorf("the defaults, pinned by digest, are refused: %v", problems)
	}
	if err := p.Images().CheckRendered(guestchart.Kubevip, testRegistry+"/kube-vip/kube-vip:v1.0.0"); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Errorf("a rendered image without a digest: %v; want refused", err)
	}
	if err := p.Images().CheckRendered(guestchart.Kubevip, testRegistry+"/kube-vip/kube-vip:"+config.DefaultKubevipImageTag); err != nil {
		t.Errorf("a rendered image with its digest: %v", err)
	}
	// Not required: a tag alone is sent.
	loose := mustPolicy(t, Settings{Registry: testRegistry})
	pl, err := loose.NewPlan(guestchart.Kubevip, "kubevipChartValues", "", chartrepo.Values(t, "image:\n  tag: v1.0.0\n"), defaultsOf(guestchart.Kubevip))
	if err != nil || pl.Values.Ref != testRegistry+"/kube-vip/kube-vip:v1.0.0" {
		t.Errorf("a tag without digests required: %v, %+v", err, pl)
	}
}

// TestRegistrySetting: the registry is a host, optionally with a port and a path, as Rancher's
// systemDefaultRegistry holds it; anything else stops the operator with a message.
func TestRegistrySetting(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"":                             "",
		"registry.corp.example":        "registry.corp.example",
		"registry.corp.example:5000/":  "registry.corp.example:5000",
		"localhost:5000":               "localhost:5000",
		"198.18.11.1:35000":            "198.18.11.1:35000",
		"registry.corp.example/mirror": "registry.corp.example/mirror",
		" registry.corp.example ":      "registry.corp.example",
	} {
		p, err := New(Settings{Registry: raw})
		if err != nil || p.Images().Registry() != want {
			t.Errorf("%q: %v, %q; want %q", raw, err, p.Images().Registry(), want)
		}
	}
	for _, raw := range []string{"https://registry.corp.example", "mirror", "mirror/kube-vip", "Registry.Corp.Example", "registry.corp.example/Mirror",
		"registry.corp.example:port", "registry corp"} {
		if _, err := New(Settings{Registry: raw}); err == nil || !strings.Contains(err.Error(), "guest image registry") {
			t.Errorf("%q: %v; want refused", raw, err)
		}
	}
}
