package integration

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

func kubevipReason(reason string) func(*v1.FloatingIP) bool {
	return func(x *v1.FloatingIP) bool {
		c, ok := v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled)
		return ok && c.Reason == reason && c.Status == "False"
	}
}

// helmReleases counts the Helm release records in the guest's kube-system.
func helmReleases(t *testing.T, gc *guestCluster) int {
	t.Helper()
	list, err := gc.direct.CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm"})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// TestChartSourceAllowList: the deployment's allow-list, not kube-fip-config, decides what runs in
// the guests. A repository outside it is refused — a Warning Event on kube-fip-config, the
// FloatingIP's KubevipInstalled=False reason ChartSourceNotAllowed, not one request to that
// repository, nothing installed — and so are chart values whose image is outside the allowed
// prefixes (ChartValuesNotAllowed). Once the ConfigMap names an allowed source and image, the
// same guest gets its releases.
func TestChartSourceAllowList(t *testing.T) {
	var requests atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.NotFound(w, nil)
	}))
	t.Cleanup(other.Close)
	repo := chartrepo.ChartRepoForTest(t, chartrepo.KubevipChart(config.DefaultKubevipChartVersion), chartrepo.KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion))

	f := newFixture(t, "kube-fip-chartsrc")
	proxy := f.shard.StartClusterProxy(t)
	gc := rancherCluster(t, proxy, "chartsrc", "c-m-chartsrc", nil, f.shard.StartGuest(t, "chartsrc"))
	f.extraNamespace(gc.id)

	base := map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled"}
	withConfig := func(extra map[string]string) {
		data := map[string]string{}
		for k, v := range base {
			data[k] = v
		}
		for k, v := range extra {
			data[k] = v
		}
		f.operatorConfig(data)
	}
	withConfig(map[string]string{"kubevipChartRepoUrl": other.URL + "/charts"})
	// Only the test repository, at its very port, is allowed (plain http is, for loopback).
	p, port := f.operator("--allowed-chart-sources=" + repo.URL)
	f.createRange("chartsrc", "10.154.0.0/28")
	f.createFIPIn(gc.id, "chartsrc-kubevip", "chartsrc", "")

	x := f.waitFIPIn(gc.id, "chartsrc-kubevip", 30*time.Second, "KubevipInstalled=False ChartSourceNotAllowed", kubevipReason("ChartSourceNotAllowed"))
	c, _ := v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled)
	if !strings.Contains(c.Message, "kubevipChartRepoUrl") || !strings.Contains(c.Message, "allowed chart sources") {
		t.Errorf("condition message %q does not say which key and why", c.Message)
	}
	rig.Eventually(t, 15*time.Second, "a Warning Event ChartSourceNotAllowed on kube-fip-config", func() bool {
		return f.shard.HasEvent(t, f.ns, "kube-fip-config", corev1.EventTypeWarning, "ChartSourceNotAllowed", "kubevipChartRepoUrl")
	})
	rig.Eventually(t, 15*time.Second, "a Warning Event ChartSourceNotAllowed on the FloatingIP", func() bool {
		return f.shard.HasEvent(t, gc.id, "chartsrc-kubevip", corev1.EventTypeWarning, "ChartSourceNotAllowed", "")
	})
	waitGuestPasses(t, port, gc)
	if n := requests.Load(); n != 0 {
		t.Errorf("the repository outside the allow-list got %d requests", n)
	}
	if n := helmReleases(t, gc); n != 0 {
		t.Errorf("%d Helm releases in the guest from a refused source", n)
	}

	// An allowed repository with an image outside the allowed prefixes: refused as well.
	withConfig(map[string]string{"kubevipChartRepoUrl": repo.URL,
		"kubevipChartValues": "image:\n  repository: docker.io/attacker/kube-vip\n  tag: v1\n"})
	x = f.waitFIPIn(gc.id, "chartsrc-kubevip", 30*time.Second, "KubevipInstalled=False ChartValuesNotAllowed", kubevipReason("ChartValuesNotAllowed"))
	c, _ = v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled)
	if !strings.Contains(c.Message, "kubevipChartValues") || !strings.Contains(c.Message, "image.repository") {
		t.Errorf("condition message %q does not name the key", c.Message)
	}
	rig.Eventually(t, 15*time.Second, "a Warning Event ChartValuesNotAllowed on kube-fip-config", func() bool {
		return f.shard.HasEvent(t, f.ns, "kube-fip-config", corev1.EventTypeWarning, "ChartValuesNotAllowed", "image.repository")
	})
	if n := helmReleases(t, gc); n != 0 {
		t.Errorf("%d Helm releases in the guest with refused values", n)
	}

	// Allowed source and the default values: installed.
	withConfig(map[string]string{"kubevipChartRepoUrl": repo.URL})
	f.waitFIPIn(gc.id, "chartsrc-kubevip", 60*time.Second, "KubevipInstalled=True", func(x *v1.FloatingIP) bool {
		c, ok := v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled)
		return ok && c.Status == "True"
	})
	if n := helmReleases(t, gc); n != 2 {
		t.Errorf("%d Helm releases in the guest once the source is allowed; want 2", n)
	}
	if t.Failed() {
		t.Logf("operator output:\n%s", p.Logs())
	}
}

// TestInstallModeTypoAtStartUp: an operator started with a typo in kubevipGuestInstall installs
// nothing, not even into a cluster labelled kube-vip=true (the default, clusterlabel, would), and
// says so on kube-fip-config.
func TestInstallModeTypoAtStartUp(t *testing.T) {
	repo := chartrepo.ChartRepoForTest(t, chartrepo.KubevipChart(config.DefaultKubevipChartVersion), chartrepo.KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion))
	f := newFixture(t, "kube-fip-typo")
	proxy := f.shard.StartClusterProxy(t)
	gc := rancherCluster(t, proxy, "typo", "c-m-typo0001", map[string]string{"kube-vip": "true"}, f.shard.StartGuest(t, "typo"))
	f.extraNamespace(gc.id)

	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2", "kubevipChartRepoUrl": repo.URL, "kubevipGuestInstall": "disable"})
	_, port := f.operator()
	f.createRange("typo", "10.155.0.0/28")
	f.createFIPIn(gc.id, "typo-kubevip", "typo", "")

	x := f.waitFIPIn(gc.id, "typo-kubevip", 30*time.Second, "KubevipInstalled=False NotWanted", kubevipReason("NotWanted"))
	if c, _ := v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled); !strings.Contains(c.Message, "disabled") {
		t.Errorf("KubevipInstalled message %q does not say disabled", c.Message)
	}
	rig.Eventually(t, 15*time.Second, "a Warning Event naming kubevipGuestInstall on kube-fip-config", func() bool {
		return f.shard.HasEvent(t, f.ns, "kube-fip-config", corev1.EventTypeWarning, "InvalidValue", "kubevipGuestInstall is disabled until it is fixed")
	})
	f.waitGuestAddress(gc, "typo-kubevip", 15*time.Second)
	waitGuestPasses(t, port, gc)
	if n := helmReleases(t, gc); n != 0 {
		t.Errorf("%d Helm releases in a labelled guest with a typo in kubevipGuestInstall", n)
	}
}
