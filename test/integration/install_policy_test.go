package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/alerts"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
)

// The install policy against real guest API servers, which admit privileged pods as RKE2 and K3s
// guests do: the helpers that look at what of a refused install reached the guest, and what a
// refusal leaves running. What the policy refuses is shown case by case in pkg/installpolicy
// (TestValuesOutsideTheSchemaAreRefused, the judge's table in judge_test.go); that a refused chart
// reaches nothing in the guest, end to end, in TestChartVariantIsRefusedByDigest and
// TestUnhardenedChartIsRefused.

// policyGuest starts guest cluster name behind proxy, with a FloatingIP holding addr of rangeName.
func policyGuest(t *testing.T, f *fixture, proxy *guests.ClusterProxy, name, rangeName, addr string) *guestCluster {
	t.Helper()
	gc := rancherCluster(t, proxy, name, "c-m-"+name, nil, f.shard.StartGuest(t, name))
	f.extraNamespace(gc.id)
	f.createFIPIn(gc.id, name, rangeName, addr)
	return gc
}

// kubevipDecided waits until the guest pass decided on kube-vip for the FloatingIP: installed, or
// refused for some reason. It gives up after 90 s without failing, so that what reached the guest
// is looked at even when the operator never says.
func (f *fixture) kubevipDecided(gc *guestCluster, name string) *v1.FloatingIP {
	f.t.Helper()
	var x *v1.FloatingIP
	rig.Within(90*time.Second, func() bool {
		x = f.getFIPIn(gc.id, name)
		c, ok := v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled)
		return ok && c.Reason != "" && c.Reason != v1.ReasonChartFetching && c.Reason != v1.ReasonNotWanted
	})
	return x
}

// reachedGuest lists what of a refused install is in the guest: release records, objects with a
// Helm hook annotation, DaemonSets, Jobs, CRDs, and workloads with host access.
func reachedGuest(t *testing.T, gc *guestCluster) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, s := range helmRecords(t, gc, "") {
		out = append(out, "release record "+s.Namespace+"/"+s.Name)
	}
	dss, err := gc.direct.AppsV1().DaemonSets("").List(ctx, listAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range dss.Items {
		out = append(out, fmt.Sprintf("DaemonSet %s/%s (annotations %v)", x.Namespace, x.Name, x.Annotations))
	}
	jobs, err := gc.direct.BatchV1().Jobs("").List(ctx, listAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range jobs.Items {
		out = append(out, "Job "+x.Namespace+"/"+x.Name)
	}
	crds, err := apiextclient.NewForConfigOrDie(gc.guest.Config).ApiextensionsV1().CustomResourceDefinitions().List(ctx, listAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range crds.Items {
		out = append(out, "CRD "+x.Name)
	}
	cms, err := gc.direct.CoreV1().ConfigMaps("").List(ctx, listAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range cms.Items {
		for k := range x.Annotations {
			if strings.HasPrefix(k, "helm.sh/hook") {
				out = append(out, "hook ConfigMap "+x.Namespace+"/"+x.Name)
			}
		}
	}
	return append(out, hostWorkloads(t, gc)...)
}

// TestInstallPolicyRefusalKeepsWhatRuns: kube-vip installed with its PodMonitor and the labels a
// Prometheus Operator's podMonitorSelector asks for (podMonitor.labels) has them in the guest. A
// configuration then using a value key the schema no longer accepts (extraArgs, which the chart
// passes through tpl) gets ChartValuesNotAllowed naming the key, even with kubevipUpdate on, and
// what was installed keeps running as it was: no release record is added or removed, and the
// DaemonSet is not touched. The refusal is seen: the operator's
// kubefipoperator_floatingip_kubevip_installed goes from 1 to 0 for the FloatingIP, and the chart's
// KubeFIPKubevipNotInstalled expression, which held for nothing while kube-vip was installed, holds
// for it.
func TestInstallPolicyRefusalKeepsWhatRuns(t *testing.T) {
	ctx := context.Background()
	repo := chartrepo.ChartRepoForTest(t, defaultCharts()...)
	f := newFixture(t, "kube-fip-ipkeep")
	proxy := f.shard.StartClusterProxy(t)
	f.createRange("ipkeep", "10.189.0.0/28")
	monitored := map[string]interface{}{"enabled": true, "labels": map[string]interface{}{"release": "rancher-monitoring", "team": "network"}}
	base := map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled", "kubevipChartRepoUrl": repo.URL, "kubevipUpdate": "true",
		"kubevipChartValues": kubevipValuesWith(t, func(v map[string]interface{}) { v["podMonitor"] = monitored })}
	f.operatorConfig(base)
	_, port := f.operator()
	g := f.shard.StartGuest(t, "ipkeep")
	installMonitoringAPI(t, g.Config, "PodMonitor")
	gc := rancherCluster(t, proxy, "ipkeep", "c-m-ipkeep", nil, g)
	f.extraNamespace(gc.id)
	f.createFIPIn(gc.id, "ipkeep", "ipkeep", "10.189.0.2")
	f.waitFIPIn(gc.id, "ipkeep", 90*time.Second, "KubevipInstalled=True", func(x *v1.FloatingIP) bool { return v1.KubevipInstalled.IsTrue(x) })
	expr := chartrepo.OperatorAlertExpr(t, f.ns, "KubeFIPKubevipNotInstalled")
	rig.Eventually(t, 10*time.Second, "the kube-vip installed metric 1", func() bool { return floatingIPMetric(t, port, kubevipSeries, gc.id, "ipkeep") == "1" })
	if held := alerts.Holds(t, expr, metricsOf(t, port)); len(held) != 0 {
		t.Errorf("%s holds for %v while kube-vip is installed; want nothing", expr, held)
	}
	before, err := gc.direct.AppsV1().DaemonSets("kube-system").Get(ctx, chartvalues.KubevipNameOverride, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podMonitors := dynamic.NewForConfigOrDie(g.Config).Resource(schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "podmonitors"})
	pm, err := podMonitors.Namespace("kube-system").Get(ctx, chartvalues.KubevipNameOverride, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("kube-vip's PodMonitor: %v", err)
	}
	if l := pm.GetLabels(); l["release"] != "rancher-monitoring" || l["team"] != "network" {
		t.Errorf("kube-vip's PodMonitor has labels %v; want those of podMonitor.labels", l)
	}
	records := len(helmRecords(t, gc, ""))

	withExtraArgs := map[string]string{}
	for k, v := range base {
		withExtraArgs[k] = v
	}
	withExtraArgs["kubevipChartValues"] = kubevipValuesWith(t, func(v map[string]interface{}) {
		v["podMonitor"] = monitored
		v["extraArgs"] = map[string]interface{}{"prometheusHTTPServer": "0.0.0.0:2112"}
	})
	f.operatorConfig(withExtraArgs)
	x := f.waitFIPIn(gc.id, "ipkeep", 60*time.Second, "KubevipInstalled=False ChartValuesNotAllowed naming extraArgs", func(x *v1.FloatingIP) bool {
		return kubevipReason(v1.ReasonChartValuesNotAllowed)(x) && strings.Contains(message(x.Status.Conditions, v1.KubevipInstalled), "extraArgs")
	})
	if msg := message(x.Status.Conditions, v1.KubevipInstalled); !strings.Contains(msg, config.KeyKubevipChartValues) {
		t.Errorf("KubevipInstalled %q does not name %s", msg, config.KeyKubevipChartValues)
	}
	rig.Eventually(t, 10*time.Second, "the kube-vip installed metric 0", func() bool { return floatingIPMetric(t, port, kubevipSeries, gc.id, "ipkeep") == "0" })
	held := alerts.Holds(t, expr, metricsOf(t, port))
	if len(held) != 1 || !strings.Contains(held[0], "name:ipkeep") || !strings.Contains(held[0], "namespace:"+gc.id) {
		t.Errorf("%s holds for %v after the refusal; want the FloatingIP %s/ipkeep", expr, held, gc.id)
	}
	rig.Eventually(t, 30*time.Second, "a Warning Event on the ConfigMap naming extraArgs", func() bool {
		return f.shard.HasEvent(t, f.ns, config.ConfigMapName, corev1.EventTypeWarning, v1.ReasonChartValuesNotAllowed, "extraArgs")
	})
	after, err := gc.direct.AppsV1().DaemonSets("kube-system").Get(ctx, chartvalues.KubevipNameOverride, metav1.GetOptions{})
	switch {
	case err != nil:
		t.Errorf("kube-vip's DaemonSet after the refusal: %v", err)
	case after.ResourceVersion != before.ResourceVersion || after.DeletionTimestamp != nil:
		t.Errorf("kube-vip's DaemonSet changed after the refusal (resourceVersion %s, was %s)", after.ResourceVersion, before.ResourceVersion)
	}
	if n := len(helmRecords(t, gc, "")); n != records {
		t.Errorf("%d Helm records after the refusal; there were %d", n, records)
	}
	if got := gc.kubevipCIDR(t); got != "10.189.0.2/32" {
		t.Errorf("the guest's address pool after the refusal is %q", got)
	}
}
