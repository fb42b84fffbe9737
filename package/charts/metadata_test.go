package charts

import (
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	appsv1 "k8s.io/api/apps/v1"
)

// TestChartAnnotations checks the annotations Rancher's Apps & Marketplace reads: the operator chart
// is a management cluster tool in kube-fip that installs its CRD chart first; the CRD chart is
// hidden and goes to the same namespace. Neither claims a certification: "rancher" and "partner"
// belong to Rancher's own and its partners' repositories.
func TestChartAnnotations(t *testing.T) {
	for _, tc := range []struct {
		chart string
		want  map[string]string
	}{
		{OperatorChart, map[string]string{
			"catalog.cattle.io/display-name":    "Floating IPs for Harvester guest clusters",
			"catalog.cattle.io/namespace":       "kube-fip",
			"catalog.cattle.io/release-name":    "kube-fip-operator",
			"catalog.cattle.io/os":              "linux",
			"catalog.cattle.io/permits-os":      "linux",
			"catalog.cattle.io/kube-version":    ">= 1.28.0-0",
			"catalog.cattle.io/rancher-version": ">= 2.8.0-0",
			"catalog.cattle.io/type":            "cluster-tool",
			"catalog.cattle.io/scope":           "management",
			"catalog.cattle.io/auto-install":    "kube-fip-operator-crd=match",
			"catalog.cattle.io/provides-gvr":    "kubefip.k8s.binbash.org.floatingip/v1",
		}},
		{CRDChart, map[string]string{
			"catalog.cattle.io/hidden":       "true",
			"catalog.cattle.io/namespace":    "kube-fip",
			"catalog.cattle.io/release-name": "kube-fip-operator-crd",
		}},
	} {
		t.Run(tc.chart, func(t *testing.T) {
			c, err := Load(chartDir(tc.chart))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.want {
				if got := c.Metadata.Annotations[k]; got != v {
					t.Errorf("%s = %q; want %q", k, got, v)
				}
			}
			for k, v := range c.Metadata.Annotations {
				if strings.Contains(k, "certified") {
					t.Errorf("annotation %s: %s; want no certification claimed", k, v)
				}
			}
		})
	}
}

// TestCRDChart renders the CRD chart: exactly the three kubefip CRDs, each kept on uninstall.
func TestCRDChart(t *testing.T) {
	c, err := Load(chartDir(CRDChart))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render(c, RenderOptions{KubeVersion: testKubeVersion})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"floatingips.kubefip.k8s.binbash.org":           true,
		"floatingipranges.kubefip.k8s.binbash.org":      true,
		"floatingipallocations.kubefip.k8s.binbash.org": true,
	}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" || !want[o.GetName()] {
			t.Errorf("unexpected %s %s", o.GetKind(), o.GetName())
			continue
		}
		delete(want, o.GetName())
		if o.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s has no helm.sh/resource-policy: keep", o.GetName())
		}
	}
	for name := range want {
		t.Errorf("CRD %s not rendered", name)
	}
}

// TestPackage packages both charts as scripts/package-helm does, loads the archives back and checks
// their version, their files (questions, app-readme, the dashboard) and that they still render.
func TestPackage(t *testing.T) {
	dest := t.TempDir()
	const version, appVersion = "1.2.3-rc1", "v1.2.3-rc1"
	for _, name := range []string{CRDChart, OperatorChart} {
		path, err := Package(chartDir(name), version, appVersion, dest)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(path) != name+"-"+version+".tgz" {
			t.Errorf("archive %s", path)
		}
		c, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if c.Metadata.Version != version || c.Metadata.AppVersion != appVersion {
			t.Errorf("%s: version %q appVersion %q", name, c.Metadata.Version, c.Metadata.AppVersion)
		}
		objs, err := Render(c, RenderOptions{APIVersions: InstallAPIVersions(), KubeVersion: testKubeVersion})
		if err != nil {
			t.Fatalf("rendering the packaged %s: %v", name, err)
		}
		if name != OperatorChart {
			continue
		}
		for _, f := range []string{"questions.yaml", "app-readme.md", "README.md", "icon.svg", "files/kube-fip-operator-dashboard.json"} {
			if !hasFile(c, f) {
				t.Errorf("the packaged chart lacks %s", f)
			}
		}
		var d appsv1.Deployment
		convert(t, find(t, objs, "Deployment", "kube-fip-operator"), &d)
		if image := d.Spec.Template.Spec.Containers[0].Image; image != "kubefip/kube-fip-operator:"+appVersion {
			t.Errorf("packaged chart's image %q; want the appVersion as tag", image)
		}
	}
}

func hasFile(c *chart.Chart, name string) bool {
	for _, f := range append(append([]*chart.File{}, c.Files...), c.Raw...) {
		if f.Name == name {
			return true
		}
	}
	return false
}
