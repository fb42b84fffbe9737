package integration

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/cloudprovider"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
)

// releaseDeployed reports whether the guest has release namespace/name in state deployed, read
// from Helm's own release Secrets.
func (gc *guestCluster) releaseDeployed(t *testing.T, namespace, name string) bool {
	t.Helper()
	list, err := gc.direct.CoreV1().Secrets(namespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: "owner=helm,status=deployed,name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items) == 1
}

// providerReads is where the kube-vip-cloud-provider Deployment of our release reads, and what
// cidr-global holds there.
func (gc *guestCluster) providerReads(t *testing.T, namespace string) (string, string) {
	t.Helper()
	ctx := context.Background()
	ns, name, err := cloudprovider.ProviderConfigMap(ctx, gc.direct, namespace, "kube-vip-cloud-provider")
	if err != nil {
		return "", ""
	}
	cm, err := gc.direct.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ns + "/" + name, ""
	}
	return ns + "/" + name, cm.Data["cidr-global"]
}

// TestGuestHarvesterCaseAllProviderGenerations: a guest carrying everything the Harvester cloud
// provider chart leaves behind (release harvester-cloud-provider, its kube-vip DaemonSet,
// ServiceAccount, ClusterRole, ClusterRoleBinding, Role and RoleBinding all named kube-vip) gets both
// our releases deployed beside it, Harvester's DaemonSet neutralised, and the address where the
// installed provider reads — for every generation of the provider chart and for a kubevipNamespace
// other than kube-system, which the deployment allows (--allowed-guest-namespaces). The provider's own lookup, run against the guest, finds the FloatingIP's
// address and only that, and hands it to a LoadBalancer Service.
func TestGuestHarvesterCaseAllProviderGenerations(t *testing.T) {
	shard := shards.TakeEarly(t)
	cases := []struct {
		provider, namespace, wantConfigMap string
	}{
		{"0.2.2", "kube-system", "kube-system/kubevip"},
		{"0.2.3", "kube-system", "kube-system/kube-vip-cloud-provider-cm"},
		{"0.2.10", "kube-system", "kube-system/kubevip"},
		{"0.2.3", "kube-vip-system", "kube-vip-system/kube-vip-cloud-provider-cm"},
		{"0.2.10", "kube-vip-system", "kube-vip-system/kubevip"},
	}
	repo := chartrepo.ChartRepoForTest(t, chartrepo.KubevipChart("0.9.9"))
	var providers []*chart.Chart
	for _, c := range cases {
		providers = append(providers, chartrepo.KubevipCloudProviderChart(c.provider))
		if err := repo.Add(providers[len(providers)-1]); err != nil {
			t.Fatal(err)
		}
	}
	f := newFixture(t, "c-m-harvcase")
	proxy := shard.StartClusterProxy(t)
	f.createRange("harvcase", "10.154.0.0/28")
	base := map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled", "kubevipChartRepoUrl": repo.URL}
	f.operatorConfig(base)
	f.operator("--allowed-guest-namespaces=kube-system,kube-vip-system", controlplane.StandInDigestsArg(providers...))
	ctx := context.Background()
	for i, c := range cases {
		name := fmt.Sprintf("harv%d", i)
		t.Run(c.provider+"-in-"+c.namespace, func(t *testing.T) {
			g := shard.StartGuest(t, "harvcase-"+name)
			if err := g.InstallHarvesterCloudProvider(); err != nil {
				t.Fatal(err)
			}
			cfg := map[string]string{"kubevipNamespace": c.namespace, "kubevipCloudProviderChartVersion": c.provider}
			for k, v := range base {
				cfg[k] = v
			}
			f.operatorConfig(cfg)
			id := fmt.Sprintf("c-m-harv%04d", i)
			gc := rancherCluster(t, proxy, name, id, nil, g)
			f.extraNamespace(id)
			addr := fmt.Sprintf("10.154.0.%d", i+2)
			f.createFIPIn(id, name+"-kubevip", "harvcase", addr)

			rig.Eventually(t, 60*time.Second, "the FloatingIP Configured", func() bool {
				x := f.getFIPIn(id, name+"-kubevip")
				return v1.GuestConfigured.IsTrue(x)
			})
			for _, rel := range []string{"kube-vip", "kube-vip-cloud-provider"} {
				if !gc.releaseDeployed(t, c.namespace, rel) {
					t.Errorf("release %s/%s is not deployed", c.namespace, rel)
				}
			}
			if !gc.releaseDeployed(t, "kube-system", controlplane.HarvesterRelease) {
				t.Error("the Harvester cloud provider's release is no longer deployed")
			}
			if _, err := gc.direct.AppsV1().DaemonSets(c.namespace).Get(ctx, "kube-fip-kube-vip", metav1.GetOptions{}); err != nil {
				t.Errorf("our kube-vip DaemonSet: %v", err)
			}
			// Harvester's kube-vip serves until ours has a ready pod, which this guest (no node)
			// reports once its DaemonSet status says so.
			ds, err := gc.direct.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-vip", metav1.GetOptions{})
			if err != nil || len(ds.Spec.Template.Spec.NodeSelector) != 0 {
				t.Errorf("Harvester's kube-vip DaemonSet was changed before the operator's kube-vip was ready: %v, %v", ds.Spec.Template.Spec.NodeSelector, err)
			}
			gc.setDaemonSetStatus(t, c.namespace, "kube-fip-kube-vip", 1, 1)
			rig.Eventually(t, 30*time.Second, "Harvester's kube-vip DaemonSet kept off every node once ours is ready", func() bool {
				ds, err := gc.direct.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-vip", metav1.GetOptions{})
				return err == nil && ds.Spec.Template.Spec.NodeSelector["node-role.kubernetes.io/harvester-kube-vip-disabled"] == "true"
			})
			where, cidr := gc.providerReads(t, c.namespace)
			if where != c.wantConfigMap || cidr != addr+"/32" {
				t.Errorf("the installed provider reads %s, which holds cidr-global %q; want %s with %s/32", where, cidr, c.wantConfigMap, addr)
			}

			// The provider's lookup, as its source does it, for a Service in namespace default.
			ns, cm, err := cloudprovider.ProviderConfigMap(ctx, gc.direct, c.namespace, "kube-vip-cloud-provider")
			if err != nil {
				t.Fatal(err)
			}
			pool, key, err := cloudprovider.ProviderPool(ctx, gc.direct, ns, cm, "default")
			if err != nil || key != "cidr-global" || len(pool) != 1 || pool[0] != netip.MustParseAddr(addr) {
				t.Fatalf("the provider's pool = %v from key %q, %v; want exactly %s from cidr-global", pool, key, err, addr)
			}
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "ingress", Namespace: "default"},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
					Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
			}
			if _, err := gc.direct.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			got, err := cloudprovider.ServeLoadBalancer(ctx, gc.direct, ns, cm, svc)
			if err != nil || got.String() != addr {
				t.Errorf("the LoadBalancer Service got %v, %v; want %s", got, err, addr)
			}
		})
	}
}

// TestGuestInstallDisabledWritesTheOriginalConfigMap: with kubevipGuestInstall disabled the
// provider is the user's own, and the address goes where the original operator wrote it,
// kube-system/kubevip; no release is installed.
func TestGuestInstallDisabledWritesTheOriginalConfigMap(t *testing.T) {
	f := newFixture(t, "c-m-noinst")
	proxy := f.shard.StartClusterProxy(t)
	g := f.shard.StartGuest(t, "noinst")
	if err := g.InstallHarvesterCloudProvider(); err != nil {
		t.Fatal(err)
	}
	gc := rancherCluster(t, proxy, "noinst", "c-m-noinst01", map[string]string{"kube-vip": "true"}, g)
	f.extraNamespace(gc.id)
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "3600", "kubevipGuestInstall": "disabled", "kubevipNamespace": "kube-vip-system"})
	f.operator()
	f.createRange("noinst", "10.155.0.0/28")
	f.createFIPIn(gc.id, "noinst-kubevip", "noinst", "10.155.0.3")
	gc.waitCIDR(t, "10.155.0.3/32", 30*time.Second)
	x := f.waitFIPIn(gc.id, "noinst-kubevip", 15*time.Second, "Configured", guestReason("Configured"))
	if c, ok := v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled); !ok || c.Reason != "NotWanted" {
		t.Errorf("KubevipInstalled = %+v; want NotWanted", c)
	}
	for _, ns := range []string{"kube-system", "kube-vip-system"} {
		list, err := gc.direct.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm"})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list.Items {
			if s.Labels["name"] != controlplane.HarvesterRelease {
				t.Errorf("release %s was installed in %s with kubevipGuestInstall disabled", s.Labels["name"], ns)
			}
		}
	}
}

// setRancherConditions replaces the management cluster's conditions, as Rancher's controllers do.
func setRancherConditions(t *testing.T, id string, conds ...mgmtv3.ClusterCondition) {
	t.Helper()
	mgmt := management.NewFactoryFromConfigOrDie(shards.Of(t).Env.Config).Management().V3().Cluster()
	m, err := mgmt.Get(id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.Status.Conditions = conds
	if _, err := mgmt.UpdateStatus(m); err != nil {
		t.Fatal(err)
	}
}

func cond(typ string, status corev1.ConditionStatus, reason string) mgmtv3.ClusterCondition {
	return mgmtv3.ClusterCondition{Type: mgmtv3.ClusterConditionType(typ), Status: status, Reason: reason}
}

// TestGuestFollowsRancherClusterState walks one cluster through what Rancher shows while it
// provisions, runs and loses its agent, and checks the guest state, reason and status metric of
// each: never "down" while Rancher is still provisioning.
func TestGuestFollowsRancherClusterState(t *testing.T) {
	f := newFixture(t, "c-m-states")
	proxy := f.shard.StartClusterProxy(t)
	proxy.DisconnectDelay = 200 * time.Millisecond
	gc := rancherCluster(t, proxy, "states", "c-m-states01", nil, f.shard.StartGuest(t, "states"))
	f.extraNamespace(gc.id)
	// A new RKE2 cluster: Connected=False, Ready=Unknown/Waiting, no Provisioned.
	setRancherConditions(t, gc.id, cond("Connected", corev1.ConditionFalse, ""), cond("Ready", corev1.ConditionUnknown, "Waiting"))
	proxy.SetMode(gc.id, guests.ProxyNotProvisioned)
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "1", "kubevipGuestInstall": "disabled"})
	_, port := f.operator()
	f.createRange("states", "10.156.0.0/28")
	f.createFIPIn(gc.id, "states-kubevip", "states", "10.156.0.4")
	metric := func(value string) func() bool {
		return func() bool {
			_, body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
			return strings.Contains(body, `kubefipoperator_guestcluster_status{guestclustername="states",harvesterclustername="harvester-c-m-states"} `+value)
		}
	}
	step := func(what, reason, state, value string) {
		t.Helper()
		x := f.waitFIPIn(gc.id, "states-kubevip", 30*time.Second, what, guestReason(reason))
		if string(x.Status.GuestState) != state {
			t.Errorf("%s: guest state %q, want %q", what, x.Status.GuestState, state)
		}
		rig.Eventually(t, 15*time.Second, what+": status metric "+value, metric(value))
	}
	step("not yet provisioned", "Provisioning", "Provisioning", "2")
	x := f.getFIPIn(gc.id, "states-kubevip")
	shows(t, "not yet provisioned", x, x.Status.Conditions, "Provisioning", true)
	rig.Eventually(t, 10*time.Second, "a Normal Provisioning Event", func() bool {
		return f.shard.HasEvent(t, gc.id, "states-kubevip", corev1.EventTypeNormal, "Provisioning", "")
	})

	// Connected, but the proxy still answers 503 ClusterUnavailable.
	setRancherConditions(t, gc.id, cond("Connected", corev1.ConditionTrue, ""), cond("Provisioned", corev1.ConditionTrue, ""))
	x = f.waitFIPIn(gc.id, "states-kubevip", 30*time.Second, "503 from the proxy", func(x *v1.FloatingIP) bool {
		c, _ := v1.GetCondition(x.Status.Conditions, v1.GuestConfigured)
		return strings.Contains(c.Message, "503")
	})
	if x.Status.GuestState != "Provisioning" {
		t.Errorf("503 from the proxy: guest state %q, want Provisioning", x.Status.GuestState)
	}

	proxy.SetMode(gc.id, guests.ProxyConnected)
	gc.waitCIDR(t, "10.156.0.4/32", 30*time.Second)
	step("connected", "Configured", "Configured", "1")
	x = f.getFIPIn(gc.id, "states-kubevip")
	showsActive(t, "connected", x, x.Status.Conditions)

	if err := proxy.RevokeClusterOwner(gc.id); err != nil {
		t.Fatal(err)
	}
	step("cluster-owner rights removed", "NotClusterOwner", "Error", "0")
	if !eventSoon(t, f.shard, gc.id, "states-kubevip", corev1.EventTypeWarning, "NotClusterOwner", "cluster-owner") {
		t.Error("no Warning Event naming the missing cluster-owner role")
	}
	x = f.getFIPIn(gc.id, "states-kubevip")
	shows(t, "cluster-owner rights removed", x, x.Status.Conditions, "NotClusterOwner", false)
	if err := proxy.Register(gc.id, gc.guest, gc.token); err != nil {
		t.Fatal(err)
	}
	step("rights back", "Configured", "Configured", "1")

	proxy.SetMode(gc.id, guests.ProxyDisconnected)
	step("tunnel broken (500)", "Disconnected", "Disconnected", "0")

	// Rancher notices: Connected=False, Ready=False/Disconnected.
	setRancherConditions(t, gc.id, cond("Connected", corev1.ConditionFalse, ""), cond("Provisioned", corev1.ConditionTrue, ""),
		cond("Ready", corev1.ConditionFalse, "Disconnected"))
	x = f.waitFIPIn(gc.id, "states-kubevip", 30*time.Second, "Rancher reports the agent lost", func(x *v1.FloatingIP) bool {
		c, _ := v1.GetCondition(x.Status.Conditions, v1.GuestConfigured)
		return c.Reason == "Disconnected" && strings.Contains(c.Message, "not connected")
	})
	if x.Status.GuestState != "Disconnected" {
		t.Errorf("agent lost: guest state %q", x.Status.GuestState)
	}
}
