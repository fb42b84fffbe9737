package installpolicy

import (
	"strings"
	"testing"

	helmchart "helm.sh/helm/v3/pkg/chart"
)

// withTemplate is the stand-in of chart with the template name's text replaced (or added).
func withTemplate(chart Chart, name, text string) *helmchart.Chart {
	ch := standIn(chart)
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
func edited(t *testing.T, chart Chart, name, old, new string) *helmchart.Chart {
	t.Helper()
	ch := standIn(chart)
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

// TestChartsFromASourceAreJudged: a chart source serving the upstream chart with a change gets
// nothing applied that the pinned upstream chart does not render: each change below is refused,
// with the reason and a message naming what was refused.
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
			return withTemplate(Kubevip, "templates/hook.yaml", "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: x\n  annotations:\n    helm.sh/hook: pre-install\n")
		}, ReasonChartRefused, "template templates/hook.yaml names helm.sh/hook"},
		{"a crds/ folder", func(t *testing.T) *helmchart.Chart {
			ch := standIn(Kubevip)
			ch.Files = append(ch.Files, &helmchart.File{Name: "crds/evil.yaml", Data: []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n")})
			return ch
		}, ReasonChartRefused, "holds crds/evil.yaml"},
		{"a dependency", func(t *testing.T) *helmchart.Chart {
			ch := standIn(Kubevip)
			ch.AddDependency(standIn(CloudProvider))
			return ch
		}, ReasonChartRefused, "has dependencies"},
		{"another chart under the name asked for", func(t *testing.T) *helmchart.Chart {
			ch := standIn(Kubevip)
			ch.Metadata.Name = "kube-vip-extra"
			return ch
		}, ReasonChartRefused, `named "kube-vip-extra"`},
		{"twin keys that differ in case", func(t *testing.T) *helmchart.Chart {
			return edited(t, Kubevip, ds, "      hostNetwork: true\n", "      hostNetwork: true\n      hostPID: true\n      hostpid: false\n")
		}, ReasonRenderRefused, `unknown field "spec.template.spec.hostpid"`},
		{"a key given twice", func(t *testing.T) *helmchart.Chart {
			return edited(t, Kubevip, ds, "      hostNetwork: true\n", "      hostNetwork: true\n      hostPID: false\n      hostPID: true\n")
		}, ReasonRenderRefused, "would not read as written"},
		{"hostPID in the default render", func(t *testing.T) *helmchart.Chart {
			return edited(t, Kubevip, ds, "      hostNetwork: true\n", "      hostNetwork: true\n      hostPID: true\n")
		}, ReasonRenderRefused, "spec.template.spec.hostPID is not set by the chart"},
		{"a command", func(t *testing.T) *helmchart.Chart {
			return edited(t, Kubevip, ds, "        name: kube-vip\n", "        name: kube-vip\n        command: [sh, -c, id]\n")
		}, ReasonRenderRefused, "containers[kube-vip].command is not set by the chart"},
		{"a second container", func(t *testing.T) *helmchart.Chart {
			return edited(t, Kubevip, ds, "      hostNetwork: true\n", "      initContainers: [{name: x, image: ghcr.io/kube-vip/kube-vip:v1.0.0}]\n      hostNetwork: true\n")
		}, ReasonRenderRefused, "initContainers"},
		{"a Secret volume of another Secret", func(t *testing.T) *helmchart.Chart {
			return edited(t, Kubevip, ds, "      hostNetwork: true\n", "      volumes: [{name: s, secret: {secretName: rancher-token}}]\n      hostNetwork: true\n")
		}, ReasonRenderRefused, "spec.template.spec.volumes is not set by the chart"},
		{"a privileged container", func(t *testing.T) *helmchart.Chart {
			return edited(t, Kubevip, ds, "          {{- toYaml .Values.securityContext | nindent 10 }}", "          {{- toYaml .Values.securityContext | nindent 10 }}\n          privileged: true")
		}, ReasonRenderRefused, "securityContext.privileged is not set by the chart"},
		{"no hardening", func(t *testing.T) *helmchart.Chart {
			return edited(t, Kubevip, ds, "          {{- toYaml .Values.securityContext | nindent 10 }}", "          {}")
		}, ReasonRenderRefused, "capabilities.drop must be [ALL]"},
		{"an aggregation label on the ClusterRole", func(t *testing.T) *helmchart.Chart {
			return edited(t, Kubevip, rbac, "  annotations:\n    rbac.authorization.kubernetes.io/autoupdate: \"true\"\n",
				"  annotations:\n    rbac.authorization.kubernetes.io/autoupdate: \"true\"\n  labels:\n    rbac.authorization.k8s.io/aggregate-to-admin: \"true\"\n")
		}, ReasonRenderRefused, `label "rbac.authorization.k8s.io/aggregate-to-admin" is not one the charts set`},
		{"a host port", func(t *testing.T) *helmchart.Chart {
			return edited(t, Kubevip, ds, "        name: kube-vip\n", "        name: kube-vip\n        ports: [{name: monitoring, containerPort: 22, hostPort: 22}]\n")
		}, ReasonRenderRefused, "may only be the monitoring port"},
		{"an image of another repository", func(t *testing.T) *helmchart.Chart {
			return edited(t, Kubevip, ds, "{{ .Values.image.repository }}:", "docker.io/library/alpine:")
		}, ReasonRenderRefused, "docker.io/library/alpine"},
		{"a binding of cluster-admin", func(t *testing.T) *helmchart.Chart {
			return edited(t, Kubevip, rbac, "  kind: ClusterRole\n  name: {{ include \"kube-vip.name\" . }}\n", "  kind: ClusterRole\n  name: cluster-admin\n")
		}, ReasonRenderRefused, "roleRef ClusterRole cluster-admin"},
		{"a wider role", func(t *testing.T) *helmchart.Chart {
			return edited(t, Kubevip, rbac, `resources: ["secrets"]`, `resources: ["secrets", "pods/exec"]`)
		}, ReasonRenderRefused, "grants list on pods/exec"},
		{"an object of another namespace", func(t *testing.T) *helmchart.Chart {
			return edited(t, Kubevip, rbac, "  namespace: {{ include \"kube-vip.namespace\" . }}\n  labels:", "  namespace: cattle-system\n  labels:")
		}, ReasonRenderRefused, "namespace cattle-system is not the release's"},
		{"a kind the chart does not create", func(t *testing.T) *helmchart.Chart {
			return withTemplate(Kubevip, "templates/pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: kube-fip-kube-vip\n")
		}, ReasonRenderRefused, "a Pod (v1), which is not a kind the kube-vip chart creates"},
		{"a template reading the guest", func(t *testing.T) *helmchart.Chart {
			return edited(t, Kubevip, ds, "        name: kube-vip\n", "        name: kube-vip\n        {{- if lookup \"v1\" \"Secret\" \"kube-system\" \"\" }}\n        workingDir: /\n        {{- end }}\n")
		}, "", "lookup"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			p, err := plan(t, Kubevip, nil)
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

// TestPodMonitorIsJudgedOnItsSpec: the kube-vip chart's PodMonitor scrapes its pods' monitoring
// port and nothing else; one with scrape credentials, relabelling or another namespace's pods is
// refused.
func TestPodMonitorIsJudgedOnItsSpec(t *testing.T) {
	t.Parallel()
	const pm = "templates/pod-monitor.yaml"
	enabled := values(t, "podMonitor: {enabled: true}\nenv: {prometheus_server: ':2112'}")
	p, err := plan(t, Kubevip, enabled)
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.Approve(standIn(Kubevip), release())
	if err != nil {
		t.Fatalf("the chart's own PodMonitor: %v", err)
	}
	if !strings.Contains(a.Manifest, "kind: PodMonitor") || !strings.Contains(a.Manifest, "name: monitoring") {
		t.Fatalf("approved manifest lacks the PodMonitor or its port:\n%s", a.Manifest)
	}
	for _, tt := range []struct{ name, old, new, says string }{
		{"scrape credentials from a Secret", "  - port: monitoring\n", "  - port: monitoring\n    basicAuth: {username: {name: rancher-token, key: token}}\n", "basicAuth"},
		{"relabelling to another address", "  - port: monitoring\n", "  - port: monitoring\n    relabelings: [{targetLabel: __address__, replacement: attacker.example:80}]\n", "relabelings"},
		{"pods of every namespace", "spec:\n", "spec:\n  namespaceSelector: {any: true}\n", "namespaceSelector"},
		{"another port", "  - port: monitoring\n", "  - port: monitoring\n  - port: http\n", "the one port named monitoring"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.Approve(edited(t, Kubevip, pm, tt.old, tt.new), release())
			if reasonOf(err) != ReasonRenderRefused || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("Approve = %v; want %s naming %s", err, ReasonRenderRefused, tt.says)
			}
		})
	}
}
