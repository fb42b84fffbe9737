package installpolicy

import (
	"errors"
	"strings"
	"testing"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/render"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// plan is the plan of chart with the given values and the operator's defaults.
func plan(t testing.TB, chart guestchart.Chart, v map[string]interface{}) (*Plan, error) {
	t.Helper()
	defaults := config.Default().Kubevip.Values
	if chart == guestchart.CloudProvider {
		defaults = config.Default().KubevipCloudProvider.Values
	}
	return Default().NewPlan(chart, "kubevipChartValues", "", v, defaults)
}

func release() render.Target {
	return render.Target{Name: "kube-vip", Namespace: "kube-system", Revision: 1}
}

func reasonOf(err error) string {
	var r *guestchart.Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}

// TestDefaultsAreApproved: the operator's own defaults install both charts, and the approved
// manifest is what Helm is handed: the objects the chart renders, in the release's namespace.
func TestDefaultsAreApproved(t *testing.T) {
	t.Parallel()
	for _, chart := range []guestchart.Chart{guestchart.Kubevip, guestchart.CloudProvider} {
		defaults := config.Default().Kubevip.Values
		if chart == guestchart.CloudProvider {
			defaults = config.Default().KubevipCloudProvider.Values
		}
		p, err := plan(t, chart, defaults)
		if err != nil {
			t.Fatalf("%s: %v", chart, err)
		}
		a, err := p.Approve(chartrepo.DefaultChart(chart), release())
		if err != nil {
			t.Fatalf("%s: %v", chart, err)
		}
		if !strings.HasPrefix(a.Digest, "sha256:") || len(a.Objects) < 4 {
			t.Errorf("%s: approval %+v", chart, a)
		}
		for _, o := range a.Objects {
			if o.Namespace != "" && o.Namespace != "kube-system" {
				t.Errorf("%s: %s outside the release namespace", chart, o)
			}
		}
		again, err := p.Approve(chartrepo.DefaultChart(chart), release())
		if err != nil || again.Digest != a.Digest {
			t.Errorf("%s: the approval is not deterministic: %v", chart, err)
		}
	}
}

// TestValuesOutsideTheSchemaAreRefused: keys the schema does not name, values of the wrong shape
// and strings with line separators are refused naming the key, before anything renders.
func TestValuesOutsideTheSchemaAreRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, values, key string
	}{
		{"a hook by annotations", "annotations: {helm.sh/hook: pre-install}", "annotations"},
		{"a mapping where envFrom's list belongs", "envFrom: {command: [sh, -c, id]}", "envFrom"},
		{"extraArgs through tpl", "extraArgs: {x: '{{ lookup \"v1\" \"Secret\" \"\" \"\" }}'}", "extraArgs"},
		{"a mapping where tolerations' list belongs", "tolerations: {command: [sh]}", "tolerations"},
		{"U+2028 in priorityClassName", "priorityClassName: \"a\u2028      hostPID: true\"", "priorityClassName"},
		{"NEL in an env value", "env: {vip_interface: \"eth0\u0085\"}", "env.vip_interface"},
		{"a zero-width space in a key", "nodeSelector: {\"a\u200bb\": x}", "nodeSelector"},
		{"an image variant with a shell", "image: {repository: ghcr.io/kube-vip/kube-vip-iptables, tag: v1.0.0}", "image.repository"},
		{"an organisation prefix", "image: {repository: ghcr.io/kube-vip/other, tag: v1.0.0}", "image.repository"},
		{"an unknown env", "env: {kubernetes_addr: 'https://attacker:6443'}", "env.kubernetes_addr"},
		{"a secret into env", "envValueFrom: {bgp_peerpass: {secretKeyRef: {name: x, key: y}}}", "envValueFrom"},
		{"a host path volume", "volumes: [{name: h, hostPath: {path: /}}]", "volumes"},
		{"a pull policy that is no policy", "image: {pullPolicy: \"Always\\n  hostPID: true\"}", "image.pullPolicy"},
		{"a twin key", "tolerations: [{key: a, Key: b}]", "tolerations"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := plan(t, guestchart.Kubevip, chartrepo.Values(t, tt.values))
			if reasonOf(err) != guestchart.ReasonValuesNotAllowed || !strings.Contains(err.Error(), tt.key) {
				t.Fatalf("got %v; want %s naming %s", err, guestchart.ReasonValuesNotAllowed, tt.key)
			}
		})
	}
}

// mustPolicy is the policy of s, or the test stops.
func mustPolicy(t testing.TB, s Settings) Policy {
	t.Helper()
	p, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
