package installpolicy

import (
	"strings"
	"testing"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartsource"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// TestValuesTheSchemaAccepts: what administrators write (the original's defaults, the images of
// either repository, a digest, scheduling, BGP) is accepted, and serialised for Helm from the
// typed values with the operator's own keys.
func TestValuesTheSchemaAccepts(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		config.DefaultKubevipChartValues,
		"config:\n  vip_interface: enp1s0\nimage:\n  repository: plndr/kube-vip\n  tag: v0.6.4\nenv:\n  prometheus_server: ':8080'\nnodeSelector:\n  node-role.kubernetes.io/master: 'true'\n",
		"image:\n  repository: ghcr.io/kube-vip/kube-vip\n  tag: v1.0.0@sha256:" + strings.Repeat("a", 64) + "\n  pullPolicy: Always\n",
		"image:\n  repository: docker.io/plndr/kube-vip\n",
		"env:\n  vip_arp: true\n  svc_election: 'true'\n  vip_leaseduration: 15\n  vip_loglevel: 4\n",
		"tolerations: []\naffinity: {}\nresources: {requests: {cpu: 10m}}\n",
	} {
		if _, err := plan(t, guestchart.Kubevip, chartrepo.Values(t, v)); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	// Another mode's variables only when the deployment allows the mode.
	bgp := mustPolicy(t, Settings{KubevipImages: imagepolicy.DefaultKubevipImages(), KubevipModes: []string{"bgp"}})
	for _, v := range []string{
		"env:\n  vip_arp: true\n  bgp_enable: 'true'\n  bgp_as: 65000\n  bgp_peers: '10.0.0.1:65001::false,[fd00::1]:65001:pass:true'\n",
		"envValueFrom:\n  bgp_routerid:\n    fieldRef:\n      fieldPath: status.podIP\n",
	} {
		if _, err := plan(t, guestchart.Kubevip, chartrepo.Values(t, v)); reasonOf(err) != guestchart.ReasonValuesNotAllowed {
			t.Errorf("%q without BGP allowed: %v; want %s", v, err, guestchart.ReasonValuesNotAllowed)
		}
		if _, err := bgp.NewPlan(guestchart.Kubevip, "kubevipChartValues", "", chartrepo.Values(t, v), config.Default().Kubevip.Values); err != nil {
			t.Errorf("%q with BGP allowed: %v", v, err)
		}
	}
	p, err := plan(t, guestchart.Kubevip, chartrepo.Values(t, "config:\n  vip_interface: enp1s0\n"))
	if err != nil {
		t.Fatal(err)
	}
	env, _ := p.Values.Map["env"].(map[string]interface{})
	if p.Values.Map["nameOverride"] != chartvalues.KubevipNameOverride || env["vip_interface"] != "enp1s0" {
		t.Errorf("the values Helm gets: %v; want nameOverride %s and env.vip_interface from config.vip_interface", p.Values.Map, chartvalues.KubevipNameOverride)
	}
	if _, stays := p.Values.Map["config"].(map[string]interface{})["vip_interface"]; stays {
		t.Error("config.vip_interface is passed on as it was, which no chart since 0.4.1 reads")
	}
	prov, err := plan(t, guestchart.CloudProvider, chartrepo.Values(t, "replicasCount: 2\n"))
	if err != nil || prov.Values.Map["configMapName"] != chartvalues.ProviderConfigMapName {
		t.Errorf("provider values %v, %v; want configMapName %s", prov, err, chartvalues.ProviderConfigMapName)
	}
}

// TestImagesAreExactRepositories: an image repository is allowed only when it is one of the
// deployment's, exactly; a refusal names the repository but never a tag, which may be anything.
func TestImagesAreExactRepositories(t *testing.T) {
	t.Parallel()
	for _, repo := range []string{"ghcr.io/kube-vip/kube-vip-iptables", "ghcr.io/kube-vip", "docker.io/plndr/kube-vip-extra",
		"ghcr.io/kube-vip-evil/kube-vip", "ghcr.io.attacker.example/kube-vip/kube-vip", "kubevip/kube-vip-cloud-provider"} {
		_, err := plan(t, guestchart.Kubevip, chartrepo.Values(t, "image:\n  repository: "+repo+"\n  tag: v1.0.0\n"))
		if reasonOf(err) != guestchart.ReasonValuesNotAllowed || !strings.Contains(err.Error(), "image.repository") {
			t.Errorf("%s: %v; want a refusal naming image.repository", repo, err)
		}
	}
	_, err := plan(t, guestchart.Kubevip, chartrepo.Values(t, "image:\n  repository: docker.io/attacker/kv\n  tag: S3CRETTAG\n"))
	if err == nil || strings.Contains(err.Error(), "S3CRETTAG") {
		t.Errorf("refusal %v; want one that does not repeat the tag", err)
	}
	// A deployment that mirrors the images allows its mirror, and only it.
	mirror, err := New(Settings{ChartSources: chartsource.DefaultChartSources(), KubevipImages: []string{"registry.corp.example:5000/mirror/kube-vip"},
		CloudProviderImages: imagepolicy.DefaultCloudProviderImages()})
	if err != nil {
		t.Fatal(err)
	}
	p, err := mirror.NewPlan(guestchart.Kubevip, "k", "", chartrepo.Values(t, "image:\n  repository: registry.corp.example:5000/mirror/kube-vip\n  tag: v1.0.0\n"),
		config.Default().Kubevip.Values)
	if err != nil {
		t.Fatalf("the mirror's image: %v", err)
	}
	a, err := p.Approve(chartrepo.DefaultChart(guestchart.Kubevip), release())
	if err != nil || !strings.Contains(a.Manifest, "image: registry.corp.example:5000/mirror/kube-vip:v1.0.0") {
		t.Errorf("the mirror's image as rendered: %v", err)
	}
	if problems := mirror.Check(config.Default()); len(problems) == 0 {
		t.Error("the mirror-only policy allows the default images")
	}
}

// TestValuesRefusalsNameTheKeyNotTheValue: the value key is named; the values, which may hold
// credentials (bgp_peerpass, say), are not repeated.
func TestValuesRefusalsNameTheKeyNotTheValue(t *testing.T) {
	t.Parallel()
	for v, key := range map[string]string{
		"env:\n  bgp_peerpass: \"S3CRET\\nx\"\n":   "env.bgp_peerpass",
		"env:\n  vip_arp: S3CRET\n":                "env.vip_arp",
		"config:\n  address: S3CRET\n":             "config.address",
		"nodeSelector:\n  a: S3CRET/not-a-value\n": "nodeSelector.a",
		"securityContext: {privileged: true}\n":    "securityContext",
		"image:\n  pullPolicy: Sometimes\n":        "image.pullPolicy",
		"replicas: 3\n":                            "replicas",
	} {
		_, err := plan(t, guestchart.Kubevip, chartrepo.Values(t, v))
		if reasonOf(err) != guestchart.ReasonValuesNotAllowed || !strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "S3CRET") {
			t.Errorf("%q: %v; want %s naming %s without the value", v, err, guestchart.ReasonValuesNotAllowed, key)
		}
	}
}
