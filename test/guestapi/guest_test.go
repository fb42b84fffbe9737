package guestapi

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/helminstall"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/pkg/outbound"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
)

// env is the package's control plane: its etcd holds every test's guest API server, under a
// prefix of its own.
var env *controlplane.Environment

func TestMain(m *testing.M) {
	var err error
	if env, err = controlplane.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// rig is one real guest API server, the test's own, behind the test cluster proxy.
type rig struct {
	server *controlplane.Guest
	proxy  *guests.ClusterProxy
	direct kubernetes.Interface
}

func newRig(t *testing.T) *rig {
	t.Helper()
	g, err := env.StartGuest(strings.ToLower(strings.TrimPrefix(t.Name(), "Test")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.StopSoon)
	proxy, err := guests.StartClusterProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	if err := proxy.Register("c-m-guest001", g, "token-1"); err != nil {
		t.Fatal(err)
	}
	return &rig{server: g, proxy: proxy, direct: kubernetes.NewForConfigOrDie(g.Config)}
}

func (r *rig) client(t *testing.T, token string) *guest.Client {
	t.Helper()
	kc, err := r.proxy.Kubeconfig("c-m-guest001", token)
	if err != nil {
		t.Fatal(err)
	}
	c, err := guest.NewClient(nil, guest.Target{Name: "guest001", ClusterID: "c-m-guest001", Kubeconfig: kc, Rancher: []string{r.proxy.URL}}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGuestOperationsThroughTheProxy(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.client(t, "token-1")

	t.Run("connection states", func(t *testing.T) {
		if state, err := c.Check(ctx); state != guest.Connected || err != nil {
			t.Fatalf("Check = %v, %v; want Connected", state, err)
		}
		r.proxy.SetMode("c-m-guest001", guests.ProxyNotProvisioned)
		if state, err := c.Check(ctx); state != guest.Provisioning {
			t.Errorf("Check before the cluster is provisioned (503) = %v, %v; want Provisioning", state, err)
		}
		r.proxy.DisconnectDelay = 200 * time.Millisecond
		r.proxy.SetMode("c-m-guest001", guests.ProxyDisconnected)
		if state, err := c.Check(ctx); state != guest.Unreachable {
			t.Errorf("Check with the tunnel down (500) = %v, %v; want Unreachable", state, err)
		}
		r.proxy.SetMode("c-m-guest001", guests.ProxyConnected)
		if state, err := r.client(t, "wrong-token").Check(ctx); state != guest.Unauthorized {
			t.Errorf("Check with a wrong token (401) = %v, %v; want Unauthorized", state, err)
		}
		if err := r.proxy.RevokeClusterOwner("c-m-guest001"); err != nil {
			t.Fatal(err)
		}
		// /version stays readable for any authenticated user: it proves nothing about the rights
		// the operator needs, which is why the probe lists ConfigMaps instead.
		if _, err := c.Core.RESTClient().Get().AbsPath("/version").DoRaw(ctx); err != nil {
			t.Errorf("/version without cluster-owner rights: %v; want it readable", err)
		}
		if state, err := c.Check(ctx); state != guest.Forbidden {
			t.Errorf("Check without cluster-owner rights (403) = %v, %v; want Forbidden", state, err)
		}
		if err := r.proxy.Register("c-m-guest001", r.server, "token-1"); err != nil {
			t.Fatal(err)
		}
		// The API server's authorizer learns of the new binding from its informer.
		deadline := time.Now().Add(10 * time.Second)
		state, err := c.Check(ctx)
		for state != guest.Connected && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			state, err = c.Check(ctx)
		}
		if state != guest.Connected {
			t.Errorf("Check with the rights back = %v, %v; want Connected", state, err)
		}
	})

	t.Run("kube-vip ConfigMap", func(t *testing.T) {
		addr := netip.MustParseAddr("10.0.0.7")
		if res, err := ensureOne(ctx, c, addr, false); err != nil || res != kubevipconfig.ConfigMapCreated {
			t.Fatalf("first write = %v, %v; want created", res, err)
		}
		cms := r.direct.CoreV1().ConfigMaps("kube-system")
		cm, err := cms.Get(ctx, kubevipconfig.KubevipConfigMap, metav1.GetOptions{})
		if err != nil || cm.Data[kubevipconfig.GlobalCIDRKey] != "10.0.0.7/32" {
			t.Fatalf("ConfigMap = %+v, %v", cm, err)
		}
		cm.Data["range-development"] = "10.0.1.10-10.0.1.20"
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if res, _ := ensureOne(ctx, c, netip.MustParseAddr("10.0.0.8"), false); res != kubevipconfig.ConfigMapLeftAlone {
			t.Errorf("a write without updateConfigMap = %v, want left alone", res)
		}
		if res, err := ensureOne(ctx, c, netip.MustParseAddr("10.0.0.8"), true); err != nil || res != kubevipconfig.ConfigMapUpdated {
			t.Fatalf("a write with updateConfigMap = %v, %v; want updated", res, err)
		}
		cm, _ = cms.Get(ctx, kubevipconfig.KubevipConfigMap, metav1.GetOptions{})
		if cm.Data[kubevipconfig.GlobalCIDRKey] != "10.0.0.8/32" || cm.Data["range-development"] != "10.0.1.10-10.0.1.20" {
			t.Errorf("after the update the ConfigMap holds %v; want the new address and the person's key", cm.Data)
		}
		if res, _ := ensureOne(ctx, c, netip.MustParseAddr("10.0.0.8"), true); res != kubevipconfig.ConfigMapUnchanged {
			t.Errorf("a second identical write = %v, want unchanged", res)
		}
		if kubevipconfig.CIDR(netip.MustParseAddr("fd00::5")) != "fd00::5/128" {
			t.Errorf("IPv6 CIDR = %s", kubevipconfig.CIDR(netip.MustParseAddr("fd00::5")))
		}
	})

	t.Run("Harvester kube-vip DaemonSet", func(t *testing.T) {
		if res, err := kubevipconfig.DisableHarvesterKubevip(ctx, c.Apps); err != nil || res != kubevipconfig.DaemonSetAbsent {
			t.Fatalf("without a DaemonSet = %v, %v", res, err)
		}
		ds := daemonSet(map[string]string{"meta.helm.sh/release-name": "someone-else"})
		dss := r.direct.AppsV1().DaemonSets("kube-system")
		if _, err := dss.Create(ctx, ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if res, _ := kubevipconfig.DisableHarvesterKubevip(ctx, c.Apps); res != kubevipconfig.DaemonSetNotHarvesters {
			t.Errorf("someone else's DaemonSet = %v, want left alone", res)
		}
		got, _ := dss.Get(ctx, "kube-vip", metav1.GetOptions{})
		if _, ok := got.Spec.Template.Spec.NodeSelector[kubevipconfig.DisabledNodeSelectorKey]; ok {
			t.Error("someone else's DaemonSet was patched")
		}
		got.Annotations["meta.helm.sh/release-name"] = kubevipconfig.HarvesterReleaseName
		if _, err := dss.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if res, err := kubevipconfig.DisableHarvesterKubevip(ctx, c.Apps); err != nil || res != kubevipconfig.DaemonSetDisabled {
			t.Fatalf("Harvester's DaemonSet = %v, %v; want disabled", res, err)
		}
		got, _ = dss.Get(ctx, "kube-vip", metav1.GetOptions{})
		generation := got.Generation
		if got.Spec.Template.Spec.NodeSelector[kubevipconfig.DisabledNodeSelectorKey] != "true" || got.Spec.Template.Spec.NodeSelector["kubernetes.io/os"] != "linux" {
			t.Errorf("node selector after the patch = %v", got.Spec.Template.Spec.NodeSelector)
		}
		if res, _ := kubevipconfig.DisableHarvesterKubevip(ctx, c.Apps); res != kubevipconfig.DaemonSetAlreadyDisabled {
			t.Errorf("second pass = %v, want already disabled", res)
		}
		if got, _ = dss.Get(ctx, "kube-vip", metav1.GetOptions{}); got.Generation != generation {
			t.Error("the second pass changed the DaemonSet again")
		}
	})
}

func daemonSet(annotations map[string]string) *appsv1.DaemonSet {
	labels := map[string]string{"app": "harvester-kube-vip"}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-vip", Namespace: "kube-system", Annotations: annotations},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
					Containers:   []corev1.Container{{Name: "kube-vip", Image: "example.invalid/kube-vip"}},
				},
			},
		},
	}
}

func TestHelmReleasesFromRepositoryAndRegistry(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.client(t, "token-1")
	repo := chartrepo.ChartRepoForTest(t, chartrepo.KubevipChart("0.1.0"))
	oci := chartrepo.OCIRegistryForTest(t)
	ref, err := oci.Push(chartrepo.KubevipCloudProviderChart("0.2.10"))
	if err != nil {
		t.Fatal(err)
	}
	in := newInstaller(t)

	values := map[string]interface{}{"env": map[string]interface{}{"vip_interface": "enp1s0"}}
	kubevip := helminstall.Release{Namespace: "kube-system", Name: "kube-vip", Chart: "kube-vip", RepoURL: repo.URL, Plan: testPlan(t, guestchart.Kubevip, "", values)}
	if out, err := ensureRelease(in, ctx, c, kubevip); err != nil || out != helminstall.Installed {
		t.Fatalf("install from the HTTP repository = %v, %v", out, err)
	}
	ds, err := r.direct.AppsV1().DaemonSets("kube-system").Get(ctx, chartvalues.KubevipNameOverride, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if env := envOf(ds.Spec.Template.Spec.Containers[0].Env); env["vip_interface"] != "enp1s0" || env["svc_enable"] != "true" {
		t.Fatalf("installed DaemonSet's environment = %v; want vip_interface from the values over the chart's defaults", env)
	}

	if out, err := ensureRelease(in, ctx, c, kubevip); err != nil || out != helminstall.Unchanged {
		t.Errorf("second pass without update = %v, %v; want unchanged", out, err)
	}
	kubevip.Update = true
	if out, err := ensureRelease(in, ctx, c, kubevip); err != nil || out != helminstall.Unchanged {
		t.Errorf("update allowed but nothing changed = %v, %v; want unchanged", out, err)
	}
	if err := repo.Add(chartrepo.KubevipChart("0.1.1")); err != nil {
		t.Fatal(err)
	}
	kubevip.Version = "0.1.1"
	kubevip.Plan = testPlan(t, guestchart.Kubevip, "0.1.1", values)
	if out, err := ensureRelease(in, ctx, c, kubevip); err != nil || out != helminstall.Upgraded {
		t.Errorf("new version = %v, %v; want upgraded", out, err)
	}
	kubevip.Plan = testPlan(t, guestchart.Kubevip, "0.1.1", map[string]interface{}{"env": map[string]interface{}{"vip_interface": "eth1"}})
	if out, err := ensureRelease(in, ctx, c, kubevip); err != nil || out != helminstall.Upgraded {
		t.Errorf("new values = %v, %v; want upgraded", out, err)
	}
	kubevip.Update = false
	kubevip.Plan = testPlan(t, guestchart.Kubevip, "0.1.1", map[string]interface{}{"env": map[string]interface{}{"vip_interface": "eth2"}})
	if out, err := ensureRelease(in, ctx, c, kubevip); err != nil || out != helminstall.Unchanged {
		t.Errorf("new values without update = %v, %v; want unchanged", out, err)
	}

	if _, err := in.ProviderConfigMap(ctx, c, "kube-system", "kube-vip-cloud-provider"); !errors.Is(err, helminstall.ErrProviderNotFound) {
		t.Errorf("ProviderConfigMap before the install = %v; want ErrProviderNotFound", err)
	}
	provider := helminstall.Release{Namespace: "kube-system", Name: "kube-vip-cloud-provider", Ref: ref, Version: "0.2.10",
		Plan: testPlan(t, guestchart.CloudProvider, "0.2.10", nil)}
	if out, err := ensureRelease(in, ctx, c, provider); err != nil || out != helminstall.Installed {
		t.Fatalf("install from the OCI registry = %v, %v", out, err)
	}
	got, err := in.ProviderConfigMap(ctx, c, "kube-system", "kube-vip-cloud-provider")
	if err != nil || got != kubevipconfig.DefaultConfigMap() {
		t.Errorf("the installed provider reads %v, %v; want kube-system/kubevip", got, err)
	}
}

// helm is Helm's own view of the guest's kube-system releases, as the Helm CLI has it, to plant
// and read records beside the operator.
func (r *rig) helm(t *testing.T) *action.Configuration {
	t.Helper()
	cfg := new(action.Configuration)
	if err := cfg.Init(helminstall.NewRESTClientGetter(r.server.Config, "kube-system"), "kube-system", "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// testPlan is the install policy's plan of chart at version with values, under the default policy
// but for the stand-ins these tests install, which it allows by digest as a deployment would.
func testPlan(t *testing.T, chart guestchart.Chart, version string, values map[string]interface{}) *installpolicy.Plan {
	t.Helper()
	defaults := config.Default().Kubevip.Values
	if chart == guestchart.CloudProvider {
		defaults = config.Default().KubevipCloudProvider.Values
	}
	s := installpolicy.DefaultSettings()
	s.ChartDigests = chartrepo.DigestEntries(chartrepo.KubevipChart("0.1.0"), chartrepo.KubevipChart("0.1.1"), chartrepo.KubevipChart("0.9.9"),
		chartrepo.KubevipCloudProviderChart("0.2.10"))
	policy, err := installpolicy.New(s)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.NewPlan(chart, "values", version, values, defaults)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newInstaller is an installer with the default limits and a cache of the test's own.
func newInstaller(t *testing.T) *helminstall.Installer {
	t.Helper()
	in, err := helminstall.NewInstaller(t.TempDir(), helminstall.DefaultLimits(), outbound.Network{})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// ensureRelease is Ensure's outcome.
func ensureRelease(in *helminstall.Installer, ctx context.Context, c *guest.Client, rel helminstall.Release) (helminstall.Outcome, error) {
	res, err := in.Ensure(ctx, c, rel)
	return res.Outcome, err
}

func envOf(env []corev1.EnvVar) map[string]string {
	out := map[string]string{}
	for _, e := range env {
		out[e.Name] = e.Value
	}
	return out
}

// TestHelmRecoversPendingRelease: a release left in pending-install (an operator killed mid-way)
// is recovered on the next pass, but only once its last change is older than the install timeout:
// a younger one may be in the middle of an install by someone else.
func TestHelmRecoversPendingRelease(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.client(t, "token-1")
	repo := chartrepo.ChartRepoForTest(t, chartrepo.KubevipChart("0.1.0"))
	in := newInstaller(t)

	cfg := r.helm(t)
	stuck := &release.Release{Name: "kube-vip", Namespace: "kube-system", Version: 1, Chart: chartrepo.KubevipChart("0.1.0"),
		Info: &release.Info{Status: release.StatusPendingInstall, LastDeployed: helmtime.Now()}}
	if err := cfg.Releases.Create(stuck); err != nil {
		t.Fatal(err)
	}
	rel := helminstall.Release{Namespace: "kube-system", Name: "kube-vip", Chart: "kube-vip", RepoURL: repo.URL, Plan: testPlan(t, guestchart.Kubevip, "", nil)}
	if out, err := ensureRelease(in, ctx, c, rel); !errors.Is(err, helminstall.ErrReleaseBusy) {
		t.Fatalf("Ensure on a release pending since just now = %v, %v; want ErrReleaseBusy", out, err)
	}
	stuck.Info.LastDeployed = helmtime.Now().Add(-helminstall.InstallTimeout - time.Second)
	if err := cfg.Releases.Update(stuck); err != nil {
		t.Fatal(err)
	}
	if out, err := ensureRelease(in, ctx, c, rel); err != nil || out != helminstall.Recovered {
		t.Fatalf("Ensure on a pending-install release = %v, %v; want recovered", out, err)
	}
	last, err := cfg.Releases.Last("kube-vip")
	if err != nil || last.Info.Status != release.StatusDeployed {
		t.Fatalf("release after recovery = %+v, %v; want deployed", last, err)
	}
}

// ensureOne writes addr as the guest's one global address into kube-vip's ConfigMap.
func ensureOne(ctx context.Context, c *guest.Client, addr netip.Addr, update bool) (kubevipconfig.ConfigMapResult, error) {
	res, err := kubevipconfig.EnsureAddresses(ctx, c.Core, kubevipconfig.DefaultConfigMap(), kubevipconfig.Addresses{Global: []netip.Addr{addr}}, update)
	return res.Result, err
}
