package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// startGuests starts guest API servers name-from .. name-(to-1), four at a time; the slice has
// them at their index.
func startGuests(t *testing.T, name string, from, to int) []*controlplane.Guest {
	t.Helper()
	env := shards.Of(t).Env
	servers := make([]*controlplane.Guest, to)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := from; i < to; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			g, err := env.StartGuest(fmt.Sprintf("%s-%02d", name, i))
			if err != nil {
				t.Error(err)
				return
			}
			servers[i] = g
			t.Cleanup(g.StopSoon)
		}(i)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return servers
}

func guestReason(reason string) func(*v1.FloatingIP) bool {
	return func(x *v1.FloatingIP) bool {
		c, ok := v1.GetCondition(x.Status.Conditions, v1.GuestConfigured)
		return ok && c.Reason == reason
	}
}

// TestGuestConfigMapFollowsTheAddress: once a connected guest's FloatingIP holds an address, the
// guest's kube-system/kubevip carries it within seconds — the interval is an hour here — a change
// of address follows, a key a person added survives, and without updateConfigMap an existing
// ConfigMap is left alone with a condition saying so.
func TestGuestConfigMapFollowsTheAddress(t *testing.T) {
	f := newFixture(t, "c-m-guestcm1")
	proxy := f.shard.StartClusterProxy(t)
	gc := rancherCluster(t, proxy, "guestcm1", f.ns, nil, f.shard.StartGuest(t, "guestcm1"))
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "3600", "kubevipGuestInstall": "disabled"})
	_, port := f.operator()
	f.createRange("guestcm1", "10.150.0.0/28")

	f.createFIPIn(f.ns, "guestcm1-kubevip", "guestcm1", "10.150.0.5")
	gc.waitCIDR(t, "10.150.0.5/32", 15*time.Second)
	x := f.waitFIP("guestcm1-kubevip", 15*time.Second, "Ready with the guest configured", func(x *v1.FloatingIP) bool {
		return v1.Ready.IsTrue(x) && x.Status.GuestState == "Configured"
	})
	if !v1.GuestConfigured.IsTrue(x) {
		t.Errorf("GuestConfigured is not True: %s", suite.StatusText(x))
	}

	ctx := context.Background()
	cm, err := gc.direct.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubevip", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["range-development"] = "10.150.1.10-10.150.1.20"
	if _, err := gc.direct.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	f.editFIPIn(f.ns, "guestcm1-kubevip", func(x *v1.FloatingIP) { x.Spec.IPAddress = "10.150.0.9" })
	gc.waitCIDR(t, "10.150.0.9/32", 15*time.Second)
	cm, _ = gc.direct.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubevip", metav1.GetOptions{})
	if cm.Data["range-development"] != "10.150.1.10-10.150.1.20" {
		t.Errorf("the person's key was lost: %v", cm.Data)
	}

	f.editFIPIn(f.ns, "guestcm1-kubevip", func(x *v1.FloatingIP) {
		x.Annotations[v1.AnnotationUpdateConfigMap] = "false"
		x.Spec.IPAddress = "10.150.0.10"
	})
	f.waitFIP("guestcm1-kubevip", 15*time.Second, "ConfigMapNotUpdated", guestReason("ConfigMapNotUpdated"))
	if got := gc.kubevipCIDR(t); got != "10.150.0.9/32" {
		t.Errorf("without updateConfigMap the ConfigMap changed to %s", got)
	}

	// The guest's series: up, its events counted, its duration observed — and gone with it.
	url := "http://127.0.0.1:" + itoa(port) + "/metrics"
	_, body := httpGet(t, url)
	for _, want := range []string{
		`kubefipoperator_guestcluster_status{guestclustername="guestcm1",harvesterclustername="harvester-c-m-guestcm1"} 1`,
		`kubefipoperator_guestcluster_events{event="configmap_management",guestclustername="guestcm1",harvesterclustername="harvester-c-m-guestcm1",status="success"} 2`,
		`kubefipoperator_guestcluster_operation_duration_seconds_count{harvesterclustername="harvester-c-m-guestcm1"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s; has:\n%s", want, grepLines(body, "guestcm1"))
		}
	}
	if err := f.api.FloatingIP().Delete(f.ns, "guestcm1-kubevip", nil); err != nil {
		t.Fatal(err)
	}
	rig.Eventually(t, 30*time.Second, "the guest's series removed with its FloatingIP", func() bool {
		_, body := httpGet(t, url)
		return !strings.Contains(body, `guestclustername="guestcm1"`)
	})
}

// TestGuestPassesWhileWaiting: a FloatingIP whose range does not exist yet waits, and its guest
// pass is retried with backoff, not run again and again while nothing changes. The range's
// allocation then runs the pass that configures the guest at once, and the retry that was still
// scheduled does not run a second one (a second read of the kubeconfig, a second round of the
// guest's API, a second status write).
func TestGuestPassesWhileWaiting(t *testing.T) {
	f := newFixture(t, "c-m-guestwait")
	proxy := f.shard.StartClusterProxy(t)
	gc := rancherCluster(t, proxy, "guestwait", f.ns, nil, f.shard.StartGuest(t, "guestwait"))
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "3600", "kubevipGuestInstall": "disabled"})
	_, port := f.operator()

	f.createFIPIn(f.ns, "guestwait-kubevip", "guestwait", "10.151.0.5")
	f.waitFIP("guestwait-kubevip", 15*time.Second, "RangeNotFound", reasonIs(v1.ReasonRangeNotFound))
	rig.Eventually(t, 15*time.Second, "a pass that waits for the address", func() bool {
		return guestPassesIn(t, port, "guestwait", "Pending") >= 1
	})
	// Retried after 1s, 2s, 4s: three passes more in the next 5s at most.
	before := guestPassesIn(t, port, "guestwait", "Pending")
	time.Sleep(5 * time.Second)
	if got := guestPassesIn(t, port, "guestwait", "Pending") - before; got > 3 {
		t.Fatalf("%v passes in 5s over a cluster whose FloatingIP waits for its range; want at most 3, retried with backoff", got)
	}

	f.createRange("guestwait", "10.151.0.0/28")
	gc.waitCIDR(t, "10.151.0.5/32", 15*time.Second)
	f.waitFIP("guestwait-kubevip", 15*time.Second, "the guest configured", func(x *v1.FloatingIP) bool {
		return x.Status.GuestState == "Configured"
	})
	// The retry still scheduled was due at most its backoff after the last waiting pass: 1s after
	// the first, doubling with each one after, up to 30s.
	waiting := guestPassesIn(t, port, "guestwait", "Pending")
	backoff := 30 * time.Second
	if waiting < 6 {
		backoff = time.Duration(1<<(int(waiting)-1)) * time.Second
	}
	time.Sleep(backoff + 2*time.Second)
	if got := guestPassesIn(t, port, "guestwait", "Configured"); got != 1 {
		t.Errorf("%v passes configured the guest, want 1: the retry scheduled while it waited ran after the pass the allocation started", got)
	}
	if got := guestPassesIn(t, port, "guestwait", "Pending"); got != waiting {
		t.Errorf("%v waiting passes, then %v after the guest was configured", waiting, got)
	}
}

// TestGuestKubevipInstallModes: kubevipGuestInstall enabled / disabled / clusterlabel with and
// without the kube-vip=true label, from the HTTP repository at a version the ConfigMap pins and
// from an OCI registry; with kubevipUpdate false a later pass changes nothing, not even a newly
// pinned version, with true only a new version does.
func TestGuestKubevipInstallModes(t *testing.T) {
	shard := shards.TakeEarly(t)
	repo := chartrepo.ChartRepoForTest(t, chartrepo.KubevipChart("0.9.7"), chartrepo.KubevipCloudProviderChart("0.2.4"))
	oci := chartrepo.OCIRegistryForTest(t)
	kvRef, err := oci.Push(chartrepo.KubevipChart("0.9.9"))
	if err != nil {
		t.Fatal(err)
	}
	cpRef, err := oci.Push(chartrepo.KubevipCloudProviderChart("0.2.10"))
	if err != nil {
		t.Fatal(err)
	}

	f := newFixture(t, "c-m-install")
	proxy := shard.StartClusterProxy(t)
	clusters := map[string]*guestCluster{}
	for _, c := range []struct {
		name  string
		label map[string]string
	}{{"labelled", map[string]string{"kube-vip": "True"}}, {"plain", nil}} {
		id := "c-m-inst" + c.name[:4]
		clusters[c.name] = rancherCluster(t, proxy, "install-"+c.name, id, c.label, shard.StartGuest(t, "install-"+c.name))
		f.extraNamespace(id)
	}
	base := map[string]string{"operateGuestClusterInterval": "2", "kubevipChartRepoUrl": repo.URL, "kubevipGuestInstall": "clusterlabel",
		"kubevipChartVersion": "0.9.7", "kubevipCloudProviderChartVersion": "0.2.4"}
	f.operatorConfig(base)
	// The deployment allows the stand-ins of every version the test installs.
	_, port := f.operator(controlplane.StandInDigestsArg(chartrepo.KubevipChart("0.9.7"), chartrepo.KubevipChart("0.9.8"),
		chartrepo.KubevipCloudProviderChart("0.2.4")))
	f.createRange("install", "10.151.0.0/28")
	for name, gc := range clusters {
		f.createFIPIn(gc.id, "install-"+name+"-kubevip", "install", "")
	}

	revision := func(gc *guestCluster, release string) (int, string) {
		list, err := gc.direct.CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + release})
		if err != nil {
			t.Fatal(err)
		}
		// The kube-vip chart labels its ServiceAccount helm.sh/chart: kube-vip-<version>.
		sa, _ := gc.direct.CoreV1().ServiceAccounts("kube-system").Get(context.Background(), "kube-fip-kube-vip", metav1.GetOptions{})
		version := ""
		if sa != nil {
			version = strings.TrimPrefix(sa.Labels["helm.sh/chart"], "kube-vip-")
		}
		return len(list.Items), version
	}

	// clusterlabel: only the labelled cluster gets the releases. Helm records a release before it
	// applies the release's objects.
	var dep *appsv1.Deployment
	rig.Eventually(t, 30*time.Second, "kube-vip installed in the labelled cluster", func() bool {
		n, _ := revision(clusters["labelled"], "kube-vip")
		m, _ := revision(clusters["labelled"], "kube-vip-cloud-provider")
		if n != 1 || m != 1 {
			return false
		}
		dep, err = clusters["labelled"].direct.AppsV1().Deployments("kube-system").Get(context.Background(), "kube-vip-cloud-provider", metav1.GetOptions{})
		return err == nil
	})
	env := map[string]string{}
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["KUBEVIP_CONFIG_MAP"] != "kubevip" || env["KUBEVIP_NAMESPACE"] != "kube-system" {
		t.Errorf("kube-vip-cloud-provider is not told to read kube-system/kubevip: %v", env)
	}
	f.waitGuestAddress(clusters["labelled"], "install-labelled-kubevip", 30*time.Second)
	waitGuestPasses(t, port, clusters["plain"], clusters["labelled"])
	if n, _ := revision(clusters["plain"], "kube-vip"); n != 0 {
		t.Errorf("the unlabelled cluster got kube-vip under clusterlabel")
	}
	if n, _ := revision(clusters["labelled"], "kube-vip"); n != 1 {
		t.Errorf("with kubevipUpdate=false later passes changed the release: %d revisions", n)
	}

	// enabled: every cluster; a new version is not taken without kubevipUpdate.
	if err := repo.Add(chartrepo.KubevipChart("0.9.8")); err != nil {
		t.Fatal(err)
	}
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2", "kubevipChartRepoUrl": repo.URL, "kubevipGuestInstall": "enabled",
		"kubevipChartVersion": "0.9.8", "kubevipCloudProviderChartVersion": "0.2.4"})
	rig.Eventually(t, 30*time.Second, "kube-vip installed in the unlabelled cluster under enabled", func() bool {
		n, _ := revision(clusters["plain"], "kube-vip")
		return n == 1
	})
	waitGuestPasses(t, port, clusters["labelled"])
	if n, v := revision(clusters["labelled"], "kube-vip"); n != 1 || v != "0.9.7" {
		t.Errorf("without kubevipUpdate the installed release moved: %d revisions, chart %s", n, v)
	}

	// kubevipUpdate true with OCI charts at new versions: both clusters upgrade, once.
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled", "kubevipUpdate": "true",
		"kubevipChartRef": kvRef, "kubevipChartVersion": "0.9.9", "kubevipCloudProviderChartRef": cpRef, "kubevipCloudProviderChartVersion": "0.2.10"})
	for name, gc := range clusters {
		gc := gc
		rig.Eventually(t, 30*time.Second, name+" upgraded to the OCI chart 0.9.9", func() bool {
			_, v := revision(gc, "kube-vip")
			return v == "0.9.9"
		})
	}
	waitGuestPasses(t, port, clusters["plain"], clusters["labelled"])
	for name, gc := range clusters {
		if n, _ := revision(gc, "kube-vip"); n != 2 {
			t.Errorf("%s: %d kube-vip revisions after one upgrade and several passes; want 2", name, n)
		}
	}

	// disabled: these guests have no Harvester kube-vip to hand over to, so the operator's stays,
	// and the FloatingIP says so.
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "disabled"})
	x := f.waitFIPIn(clusters["plain"].id, "install-plain-kubevip", 30*time.Second, "KubevipInstalled=KubevipHandOverPending", func(x *v1.FloatingIP) bool {
		c, ok := v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled)
		return ok && c.Reason == v1.ReasonHandOverPending
	})
	if msg := message(x.Status.Conditions, v1.KubevipInstalled); !strings.Contains(msg, "the guest has no DaemonSet kube-system/kube-vip") {
		t.Errorf("KubevipInstalled says %q; want it to say the guest has no Harvester kube-vip", msg)
	}
	waitGuestPasses(t, port, clusters["plain"])
	if n, _ := revision(clusters["plain"], "kube-vip"); n != 2 {
		t.Errorf("with no Harvester kube-vip to hand over to, kube-vip's release changed: %d revisions; want 2", n)
	}
}

// TestGuestUnreachableClustersDoNotDelayOthers: of 20 guest clusters 5 are unreachable (the proxy
// holds their requests, then fails them); the 15 others are configured well within one interval,
// the 5 report Disconnected with status 0, and recover by themselves once reconnected.
func TestGuestUnreachableClustersDoNotDelayOthers(t *testing.T) {
	f := newFixture(t, "c-m-twenty")
	proxy := f.shard.StartClusterProxy(t)
	proxy.DisconnectDelay = 10 * time.Second
	// The 20 clusters share four guest API servers, each with a kube-system of its own there: with
	// the guest install disabled the operator writes nothing else into a guest.
	servers := startGuests(t, "twenty", 0, 4)
	clusters := make([]*guestCluster, 20)
	for i := range clusters {
		id := fmt.Sprintf("c-m-twen%04d", i)
		clusters[i] = rancherCluster(t, proxy, fmt.Sprintf("twenty-%02d", i), id, nil, nil)
		clusters[i].share(t, proxy, servers[i%len(servers)])
		f.extraNamespace(id)
		if i < 5 {
			proxy.SetMode(id, guests.ProxyDisconnected)
		}
	}
	const interval = 600 * time.Second
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "600", "kubevipGuestInstall": "disabled"})
	_, port := f.operator()
	f.createRange("twenty", "10.152.0.0/26")
	start := time.Now()
	for i, gc := range clusters {
		f.createFIPIn(gc.id, fmt.Sprintf("twenty-%02d-kubevip", i), "twenty", fmt.Sprintf("10.152.0.%d", i+1))
	}
	// "Well under one interval": a sixth of it at most, on a loaded two-core machine.
	for i := 5; i < 20; i++ {
		if !clusters[i].hasCIDR(t, fmt.Sprintf("10.152.0.%d/32", i+1), interval/6) {
			x := f.getFIPIn(clusters[i].id, fmt.Sprintf("twenty-%02d-kubevip", i))
			t.Fatalf("guest %s not configured within %s: %s", clusters[i].name, interval/6, suite.StatusText(x))
		}
	}
	t.Logf("15 reachable guests configured in %s (interval %s, 5 guests hold each request 10s)", time.Since(start).Round(100*time.Millisecond), interval)
	for i := 0; i < 5; i++ {
		f.waitFIPIn(clusters[i].id, fmt.Sprintf("twenty-%02d-kubevip", i), 60*time.Second, "Disconnected", guestReason("Disconnected"))
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	rig.Eventually(t, 30*time.Second, "status metric 0 for the unreachable and 1 for the others", func() bool {
		_, body := httpGet(t, url)
		return strings.Contains(body, `kubefipoperator_guestcluster_status{guestclustername="twenty-00",harvesterclustername="harvester-c-m-twenty"} 0`) &&
			strings.Contains(body, `kubefipoperator_guestcluster_status{guestclustername="twenty-19",harvesterclustername="harvester-c-m-twenty"} 1`)
	})

	for i := 0; i < 5; i++ {
		proxy.SetMode(clusters[i].id, guests.ProxyConnected)
	}
	for i := 0; i < 5; i++ {
		clusters[i].waitCIDR(t, fmt.Sprintf("10.152.0.%d/32", i+1), 180*time.Second)
	}
	f.waitFIPIn(clusters[0].id, "twenty-00-kubevip", 30*time.Second, "Configured after the reconnect", guestReason("Configured"))
}
