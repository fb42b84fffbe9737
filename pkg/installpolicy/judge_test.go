package installpolicy

import (
	"strings"
	"testing"

	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// withTemplate is the stand-in of chart with the template name's text replaced (or added).
func withTemplate(chart guestchart.Chart, name, text string) *helmchart.Chart {
	ch := chartrepo.DefaultChart(chart)
	for _, t := range ch.Templates {
		if t.Name == name {
			t.Data = []byte(text)
			return ch
		}
	}
	ch.Templates = append(ch.Templates, &helmchart.File{Name: name, Data: []byte(text)})
	return ch
}

// edited is the stand-in of chart with old replaced by new in template name: a chart source
// serving the upstream chart with one change.
func edited(t *testing.T, chart guestchart.Chart, name, old, new string) *helmchart.Chart {
	t.Helper()
	ch := chartrepo.DefaultChart(chart)
	for _, f := range ch.Templates {
		if f.Name == name {
			if !strings.Contains(string(f.Data), old) {
				t.Fatalf("template %s has no %q", name, old)
			}
			f.Data = []byte(strings.Replace(string(f.Data), old, new, 1))
			return ch
		}
	}
	t.Fatalf("no template %s", name)
	return nil
}

// TestChartsFromASourceAreJudged: what is judged of a chart even where the deployment allows its
// digest (everything else of its render with the product's defaults is the archive's, which the
// digest vouches for): its package (hooks, CRDs, dependencies, its name), how its documents decode,
// the kinds and namespace of its objects, the variables (an image, a port), and a template's lookup.
// Each change below is refused, with the reason and a message naming what was refused.
func TestChartsFromASourceAreJudged(t *testing.T) {
	t.Parallel()
	const ds = "templates/daemonset.yaml"
	const rbac = "templates/rbac.yaml"
	cases := []struct {
		name   string
		chart  func(t *testing.T) *helmchart.Chart
		reason string
		says   string
	}{
		{"a hook template", func(t *testing.T) *helmchart.Chart {
			return withTemplate(guestchart.Kubevip, "templates/hook.yaml", "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: x\n  annotations:\n    helm.sh/hook: pre-install\n")
		}, guestchart.ReasonChartRefused, "template templates/hook.yaml names helm.sh/hook"},
		{"a crds/ folder", func(t *testing.T) *helmchart.Chart {
			ch := chartrepo.DefaultChart(guestchart.Kubevip)
			ch.Files = append(ch.Files, &helmchart.File{Name: "crds/evil.yaml", Data: []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n")})
			return ch
		}, guestchart.ReasonChartRefused, "holds crds/evil.yaml"},
		{"a dependency", func(t *testing.T) *helmchart.Chart {
			ch := chartrepo.DefaultChart(guestchart.Kubevip)
			ch.AddDependency(chartrepo.DefaultChart(guestchart.CloudProvider))
			return ch
		}, guestchart.ReasonChartRefused, "has dependencies"},
		{"another chart under the name asked for", func(t *testing.T) *helmchart.Chart {
			ch := chartrepo.DefaultChart(guestchart.Kubevip)
			ch.Metadata.Name = "kube-vip-extra"
			return ch
		}, guestchart.ReasonChartRefused, `named "kube-vip-extra"`},
		{"twin keys that differ in case", func(t *testing.T) *helmchart.Chart {
			return edited(t, guestchart.Kubevip, ds, "      hostNetwork: true\n", "      hostNetwork: true\n      hostPID: true\n      hostpid: false\n")
		}, guestchart.ReasonRenderRefused, `unknown field "spec.template.spec.hostpid"`},
		{"a key given twice", func(t *testing.T) *helmchart.Chart {
			return edited(t, guestchart.Kubevip, ds, "      hostNetwork: true\n", "      hostNetwork: true\n      hostPID: false\n      hostPID: true\n")
		}, guestchart.ReasonRenderRefused, "would not read as written"},
		{"a host port", func(t *testing.T) *helmchart.Chart {
			return edited(t, guestchart.Kubevip, ds, "        name: kube-vip\n", "        name: kube-vip\n        ports: [{name: monitoring, containerPort: 22, hostPort: 22}]\n")
		}, guestchart.ReasonRenderRefused, "may only be the monitoring port"},
		{"an image of another repository", func(t *testing.T) *helmchart.Chart {
			return edited(t, guestchart.Kubevip, ds, "{{ .Values.image.repository }}:", "docker.io/library/alpine:")
		}, guestchart.ReasonRenderRefused, "docker.io/library/alpine"},
		{"an object of another namespace", func(t *testing.T) *helmchart.Chart {
			return edited(t, guestchart.Kubevip, rbac, "  namespace: {{ include \"kube-vip.namespace\" . }}\n  labels:", "  namespace: cattle-system\n  labels:")
		}, guestchart.ReasonRenderRefused, "namespace cattle-system is not the release's"},
		{"a kind the chart does not create", func(t *testing.T) *helmchart.Chart {
			return withTemplate(guestchart.Kubevip, "templates/pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: kube-fip-kube-vip\n")
		}, guestchart.ReasonRenderRefused, "a Pod (v1), which is not a kind the kube-vip chart creates"},
		{"a template reading the guest", func(t *testing.T) *helmchart.Chart {
			return edited(t, guestchart.Kubevip, ds, "        name: kube-vip\n", "        name: kube-vip\n        {{- if lookup \"v1\" \"Secret\" \"kube-system\" \"\" }}\n        workingDir: /\n        {{- end }}\n")
		}, "", "lookup"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			p, err := plan(t, guestchart.Kubevip, nil)
			if err != nil {
				t.Fatal(err)
			}
			a, err := p.Approve(tt.chart(t), release())
			if tt.reason == "" {
				// A template that reads the guest finds nothing here and renders as without it:
				// what it would have read never reaches what is applied.
				if err != nil || strings.Contains(a.Manifest, "workingDir") {
					t.Fatalf("Approve = %v; want the render of a lookup that finds nothing", err)
				}
				return
			}
			if reasonOf(err) != tt.reason || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("Approve = %v; want %s saying %q", err, tt.reason, tt.says)
			}
		})
	}
}
