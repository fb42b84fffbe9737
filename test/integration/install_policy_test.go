package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rancher/wrangler/v2/pkg/condition"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	corev1 "k8s.io/api/core/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/controllers/guestcluster"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
)

// The install policy against real guest API servers, which admit privileged pods as RKE2 and K3s
// guests do: each way through the policy that a review of the operator found (values that turn
// the DaemonSet into a hook, reshape its pod, break lines Unicode's way or hide twin keys from the
// judge; a chart source's CRDs, hooks and twin keys; a forged release record) reaches nothing in
// the guest. Each case looks at the guest first and at what the operator said after: an operator
// that lets the case through fails on what the guest holds.

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

// TestInstallPolicyChartSources: a chart source serving the kube-vip chart with a crds/ folder and
// a hook (class 5), or with twin keys in its DaemonSet (class 4 from the source's side), gets
// nothing applied: the chart is refused, and the guest holds no CRD, no Job, no release, no
// workload with host PID. The deployment allows both archives by digest here, so that what
// refuses them is the judge: without that, their digests alone refuse them (chart_archives_test.go).
func TestInstallPolicyChartSources(t *testing.T) {
	shard := shards.Take(t)
	f := newFixture(t, "kube-fip-ipsources")
	proxy := shard.StartClusterProxy(t)
	provider := chartrepo.KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion)
	withCRDAndHook := chartrepo.KubevipChart(config.DefaultKubevipChartVersion)
	withCRDAndHook.Files = append(withCRDAndHook.Files, &chart.File{Name: "crds/backdoors.yaml", Data: []byte(
		"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: backdoors.example.com\nspec:\n" +
			"  group: example.com\n  names: {kind: Backdoor, plural: backdoors}\n  scope: Namespaced\n" +
			"  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n")})
	withCRDAndHook.Templates = append(withCRDAndHook.Templates, &chart.File{Name: "templates/hook.yaml", Data: []byte(
		"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: hook-ran\n  namespace: kube-system\n  annotations:\n    helm.sh/hook: pre-install\n" +
			"spec:\n  template:\n    spec:\n      hostPID: true\n      restartPolicy: Never\n" +
			"      containers: [{name: x, image: docker.io/library/alpine:3.20, command: [nsenter, -t, '1', -m, id]}]\n")})
	withTwins := chartrepo.KubevipChart(config.DefaultKubevipChartVersion)
	for _, tpl := range withTwins.Templates {
		if tpl.Name == "templates/daemonset.yaml" {
			tpl.Data = []byte(strings.Replace(string(tpl.Data), "      hostNetwork: true\n", "      hostNetwork: true\n      hostPID: true\n      hostpid: false\n", 1))
		}
	}
	cases := []struct {
		name   string
		chart  *chart.Chart
		reason string
		says   string
	}{
		{"class 5: crds/ and a hook template", withCRDAndHook, v1.ReasonChartRefused, "CRDs are not installed"},
		{"class 4: twin keys in the source's DaemonSet", withTwins, v1.ReasonRenderRefused, "hostpid"},
	}
	f.createRange("ipsources", "10.187.0.0/28")
	for i, c := range cases {
		repo := chartrepo.ChartRepoForTest(t, c.chart, provider)
		f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled", "kubevipChartRepoUrl": repo.URL})
		if i == 0 {
			f.operator(controlplane.StandInDigestsArg(withCRDAndHook, withTwins))
		}
		name := fmt.Sprintf("ipsources%d", i+1)
		gc := policyGuest(t, f, proxy, name, "ipsources", fmt.Sprintf("10.187.0.%d", i+2))
		x := f.kubevipDecided(gc, name)
		for _, what := range reachedGuest(t, gc) {
			t.Errorf("%s: in the guest: %s", c.name, what)
		}
		if msg := message(x.Status.Conditions, v1.KubevipInstalled); !kubevipReason(c.reason)(x) || !strings.Contains(msg, c.says) {
			t.Errorf("%s: KubevipInstalled %q; want %s saying %q", c.name, msg, c.reason, c.says)
		}
		rig.Eventually(t, 30*time.Second, c.name+": a Warning Event "+c.reason, func() bool {
			return shard.HasEvent(t, gc.id, name, corev1.EventTypeWarning, c.reason, c.says)
		})
	}
}

// TestInstallPolicyForgedRecords (class 6): a release record planted in a guest where the
// operator has none of its own yet, naming objects of others in its manifest, is never the base of
// an upgrade: pending-upgrade with kubevipUpdate off, or deployed with it on, the operator installs
// its release over it with a Warning UntrustedReleaseRecord, and deletes nothing the record lists.
// The management side then remembers the release it applied, and a record forged later over it is
// not trusted either.
func TestInstallPolicyForgedRecords(t *testing.T) {
	shard := shards.Take(t)
	ctx := context.Background()
	repo := chartrepo.ChartRepoForTest(t, defaultCharts()...)
	f := newFixture(t, "kube-fip-ipforged")
	proxy := shard.StartClusterProxy(t)
	f.createRange("ipforged", "10.188.0.0/28")
	cases := []struct {
		name   string
		status release.Status
		update string
	}{
		{"pending-upgrade with kubevipUpdate off", release.StatusPendingUpgrade, "false"},
		{"deployed with kubevipUpdate on", release.StatusDeployed, "true"},
	}
	for i, c := range cases {
		f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled",
			"kubevipChartRepoUrl": repo.URL, "kubevipUpdate": c.update})
		if i == 0 {
			f.operator()
		}
		name := fmt.Sprintf("ipforged%d", i+1)
		gc := rancherCluster(t, proxy, name, "c-m-"+name, nil, shard.StartGuest(t, name))
		f.extraNamespace(gc.id)
		// What the record claims: CoreDNS's ConfigMap and a namespace of Rancher's agent.
		if _, err := gc.direct.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cattle-system"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := gc.direct.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "coredns"},
			Data: map[string]string{"Corefile": ".:53 {}"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		forged := &release.Release{Name: "kube-vip", Namespace: "kube-system", Version: 1, Chart: chartrepo.KubevipChart(config.DefaultKubevipChartVersion),
			Info: &release.Info{Status: c.status, LastDeployed: helmtime.Unix(0, 0)},
			Manifest: "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: coredns\n  namespace: kube-system\n" +
				"---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: cattle-system\n"}
		if err := storage.Init(driver.NewSecrets(gc.direct.CoreV1().Secrets("kube-system"))).Create(forged); err != nil {
			t.Fatal(err)
		}
		f.createFIPIn(gc.id, name, "ipforged", fmt.Sprintf("10.188.0.%d", i+2))
		x := f.kubevipDecided(gc, name)

		if _, err := gc.direct.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: CoreDNS's ConfigMap, listed in the forged record: %v", c.name, err)
		}
		ns, err := gc.direct.CoreV1().Namespaces().Get(ctx, "cattle-system", metav1.GetOptions{})
		if err != nil || ns.DeletionTimestamp != nil {
			t.Errorf("%s: namespace cattle-system, listed in the forged record: %v (deleting since %v)", c.name, err, ns.DeletionTimestamp)
		}
		if !v1.KubevipInstalled.IsTrue(x) {
			t.Fatalf("%s: KubevipInstalled %s %q; want the release installed over the record", c.name,
				reasonOfCondition(x, v1.KubevipInstalled), message(x.Status.Conditions, v1.KubevipInstalled))
		}
		rig.Eventually(t, 30*time.Second, c.name+": a Warning Event "+v1.ReasonUntrustedRecord, func() bool {
			return shard.HasEvent(t, gc.id, name, corev1.EventTypeWarning, v1.ReasonUntrustedRecord, "sh.helm.release.v1.kube-vip.v1")
		})
		last, err := storage.Init(driver.NewSecrets(gc.direct.CoreV1().Secrets("kube-system"))).Last("kube-vip")
		if err != nil || last.Version != 2 || last.Info.Status != release.StatusDeployed {
			t.Fatalf("%s: the newest kube-vip record %v, %v; want revision 2 deployed", c.name, last, err)
		}
		// What the operator applied is remembered on the management side, digest and all.
		x = f.waitFIPIn(gc.id, name, 30*time.Second, "status.kubevipReleases names both releases", func(x *v1.FloatingIP) bool {
			return len(x.Status.KubevipReleases) == 2
		})
		for _, r := range x.Status.KubevipReleases {
			if r.Name == "kube-vip" && (r.Revision != 2 || r.ManifestDigest != guestchart.Digest([]byte(last.Manifest))) {
				t.Errorf("%s: remembered %+v; the guest's record is revision %d with digest %s", c.name, r, last.Version, guestchart.Digest([]byte(last.Manifest)))
			}
		}
	}
}

func reasonOfCondition(x *v1.FloatingIP, typ condition.Cond) string {
	c, _ := v1.GetCondition(x.Status.Conditions, typ)
	return c.Reason
}

// TestInstallPolicyRefusalKeepsWhatRuns: kube-vip installed with its PodMonitor and the labels a
// Prometheus Operator's podMonitorSelector asks for (podMonitor.labels) has them in the guest. A
// configuration then using a value key the schema no longer accepts (extraArgs, which the chart
// passes through tpl) gets ChartValuesNotAllowed naming the key, even with kubevipUpdate on, and
// what was installed keeps running as it was: no release record is added or removed, and the
// DaemonSet is not touched.
func TestInstallPolicyRefusalKeepsWhatRuns(t *testing.T) {
	shard := shards.Take(t)
	ctx := context.Background()
	repo := chartrepo.ChartRepoForTest(t, defaultCharts()...)
	f := newFixture(t, "kube-fip-ipkeep")
	proxy := shard.StartClusterProxy(t)
	f.createRange("ipkeep", "10.189.0.0/28")
	monitored := map[string]interface{}{"enabled": true, "labels": map[string]interface{}{"release": "rancher-monitoring", "team": "network"}}
	base := map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled", "kubevipChartRepoUrl": repo.URL, "kubevipUpdate": "true",
		"kubevipChartValues": kubevipValuesWith(t, func(v map[string]interface{}) { v["podMonitor"] = monitored })}
	f.operatorConfig(base)
	f.operator()
	g := shard.StartGuest(t, "ipkeep")
	installMonitoringAPI(t, g.Config, "PodMonitor")
	gc := rancherCluster(t, proxy, "ipkeep", "c-m-ipkeep", nil, g)
	f.extraNamespace(gc.id)
	f.createFIPIn(gc.id, "ipkeep", "ipkeep", "10.189.0.2")
	f.waitFIPIn(gc.id, "ipkeep", 90*time.Second, "KubevipInstalled=True", func(x *v1.FloatingIP) bool { return v1.KubevipInstalled.IsTrue(x) })
	before, err := gc.direct.AppsV1().DaemonSets("kube-system").Get(ctx, guestcluster.KubevipNameOverride, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podMonitors := dynamic.NewForConfigOrDie(g.Config).Resource(schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "podmonitors"})
	pm, err := podMonitors.Namespace("kube-system").Get(ctx, guestcluster.KubevipNameOverride, metav1.GetOptions{})
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
	rig.Eventually(t, 30*time.Second, "a Warning Event on the ConfigMap naming extraArgs", func() bool {
		return shard.HasEvent(t, f.ns, config.ConfigMapName, corev1.EventTypeWarning, v1.ReasonChartValuesNotAllowed, "extraArgs")
	})
	after, err := gc.direct.AppsV1().DaemonSets("kube-system").Get(ctx, guestcluster.KubevipNameOverride, metav1.GetOptions{})
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
