package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// adminBindingHook is the manifest of a pre-delete hook binding cluster-admin to user, one the
// guest would take (a dry run of it passes), so that its absence later is no API server's doing.
func adminBindingHook(t *testing.T, gc *guestCluster, name, user string) []byte {
	t.Helper()
	crb := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"helm.sh/hook": "pre-delete"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := gc.direct.RbacV1().ClusterRoleBindings().Create(context.Background(), crb, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("the hook's ClusterRoleBinding would not be created anyway: %v", err)
	}
	hook, err := yaml.Marshal(crb)
	if err != nil {
		t.Fatal(err)
	}
	return hook
}

// watchBindings records every ClusterRoleBinding of the guest that binds user or is called name,
// from now until the test ends.
func watchBindings(t *testing.T, gc *guestCluster, name, user string) func() []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := gc.direct.RbacV1().ClusterRoleBindings().Watch(ctx, listAll())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	var seen []string
	go func() {
		for ev := range w.ResultChan() {
			x, ok := ev.Object.(*rbacv1.ClusterRoleBinding)
			if !ok || ev.Type == watch.Bookmark {
				continue
			}
			for _, s := range x.Subjects {
				if s.Name == user || x.Name == name {
					mu.Lock()
					seen = append(seen, fmt.Sprintf("%s %s → %s", ev.Type, x.Name, x.RoleRef.Name))
					mu.Unlock()
				}
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// adminGetter is how Helm's CLI reaches a cluster: as its administrator, with the cluster's API
// discovery, and namespace kube-system.
type adminGetter struct{ config *rest.Config }

func (g adminGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.config), nil }

func (g adminGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(g.config))
	if err != nil {
		return nil, err
	}
	return memory.NewMemCacheClient(dc), nil
}

func (g adminGetter) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(dc), nil
}

func (g adminGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: "kube-system"}})
}

// TestGuestHostileRecordOfAnotherReleaseIsRefused (class 5): guest A holds a Helm release of
// its owner's, "victim", and a record Secret named and labelled as revision 1 of the operator's
// kube-vip release whose inside is revision 1 of "victim", with a pre-delete hook that binds
// cluster-admin to a user. With kubevipUpdate on, the operator would upgrade kube-vip from it and
// write it back, as superseded, under the name inside: over victim's record, hook and all, for
// the next uninstall of victim to run. Instead, A's FloatingIP says ReleaseRecordRefused, naming
// the record and the release inside; victim's record is the very Secret it was (resourceVersion
// and data); nothing of kube-vip is written in A; and uninstalling victim afterwards, as its
// owner would, runs no hook of the forged record: the binding never appears. Guest B, meanwhile,
// is configured as usual.
func TestGuestHostileRecordOfAnotherReleaseIsRefused(t *testing.T) {
	ctx := context.Background()
	repo := chartrepo.ChartRepoForTest(t, defaultCharts()...)
	f := newFixture(t, "kube-fip-hident")
	proxy := f.shard.StartClusterProxy(t)
	a := rancherCluster(t, proxy, "hident-a", "c-m-hidenta1", nil, f.shard.StartGuest(t, "hident-a"))
	b := rancherCluster(t, proxy, "hident-b", "c-m-hidentb1", nil, f.shard.StartGuest(t, "hident-b"))
	f.extraNamespace(a.id)
	f.extraNamespace(b.id)

	const victim, binding, user = "victim", "victim-admin", "mallory"
	secrets := a.direct.CoreV1().Secrets("kube-system")
	settings := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: victim-settings\n  namespace: kube-system\n"
	if _, err := a.direct.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "victim-settings"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	victimRelease := &release.Release{Name: victim, Namespace: "kube-system", Version: 1,
		Chart:    &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "victim-app", Version: "1.0.0"}},
		Info:     &release.Info{Status: release.StatusDeployed, LastDeployed: helmtime.Now()},
		Manifest: "---\n# Source: victim-app/templates/settings.yaml\n" + settings}
	if err := storage.Init(driver.NewSecrets(secrets)).Create(victimRelease); err != nil {
		t.Fatal(err)
	}

	hook := adminBindingHook(t, a, binding, user)
	// Inside, revision 1 of victim, holding the kube-vip chart (so that it passes for the
	// operator's release) and the hook; outside, revision 1 of kube-vip.
	forged := &release.Release{Name: victim, Namespace: "kube-system", Version: 1,
		Chart:    chartrepo.KubevipChart(config.DefaultKubevipChartVersion),
		Info:     &release.Info{Status: release.StatusDeployed, LastDeployed: helmtime.Now()},
		Manifest: victimRelease.Manifest,
		Hooks: []*release.Hook{{Name: binding, Kind: "ClusterRoleBinding", Path: "victim-app/templates/hook.yaml", Manifest: string(hook),
			Events: []release.HookEvent{release.HookPreDelete}}}}
	const forgedKey = "sh.helm.release.v1.kube-vip.v1"
	if err := driver.NewSecrets(secrets).Create(forgedKey, forged); err != nil {
		t.Fatal(err)
	}
	s, err := secrets.Get(ctx, forgedKey, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Labels["name"] = "kube-vip"
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	before, err := secrets.Get(ctx, "sh.helm.release.v1."+victim+".v1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	forgedBefore, err := secrets.Get(ctx, forgedKey, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound := watchBindings(t, a, binding, user)

	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled", "kubevipChartRepoUrl": repo.URL,
		"kubevipUpdate": "true"})
	_, port := f.operator()
	f.createRange("hident", "10.214.0.0/28")
	f.createFIPIn(a.id, "hident-a-kubevip", "hident", "10.214.0.2")
	f.createFIPIn(b.id, "hident-b-kubevip", "hident", "10.214.0.3")

	b.waitCIDR(t, "10.214.0.3/32", 90*time.Second)
	f.waitFIPIn(b.id, "hident-b-kubevip", 60*time.Second, "guest B KubevipInstalled=True", func(x *v1.FloatingIP) bool { return v1.KubevipInstalled.IsTrue(x) })
	x := f.kubevipDecided(a, "hident-a-kubevip")
	c, _ := v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled)
	t.Logf("guest A: KubevipInstalled=%s %s: %s", c.Status, c.Reason, c.Message)
	if c.Reason != v1.ReasonRecordRefused || c.Status != "False" || !strings.Contains(c.Message, forgedKey) || !strings.Contains(c.Message, `"`+victim+`"`) {
		t.Errorf("guest A: KubevipInstalled=%s %s %q; want False %s naming %s and the release inside", c.Status, c.Reason, c.Message, v1.ReasonRecordRefused, forgedKey)
	}
	if !eventSoon(t, f.shard, a.id, "hident-a-kubevip", corev1.EventTypeWarning, v1.ReasonRecordRefused, forgedKey) {
		t.Errorf("no Warning Event %s; the Events: %v", v1.ReasonRecordRefused, eventMessages(t, a.id, "hident-a-kubevip"))
	}
	// More passes over A, each of which could have upgraded over the record.
	waitGuestPasses(t, port, a, b)

	after, err := secrets.Get(ctx, before.Name, metav1.GetOptions{})
	switch {
	case err != nil:
		t.Errorf("victim's record: %v", err)
	case after.ResourceVersion != before.ResourceVersion || !bytes.Equal(after.Data["release"], before.Data["release"]):
		t.Errorf("victim's record was written (resourceVersion %s, was %s; labels %v)", after.ResourceVersion, before.ResourceVersion, after.Labels)
	}
	if got, err := secrets.Get(ctx, forgedKey, metav1.GetOptions{}); err != nil || got.ResourceVersion != forgedBefore.ResourceVersion {
		t.Errorf("the forged record afterwards: %v; want it as planted", err)
	}
	if n := len(helmRecords(t, a, "name=kube-vip")); n != 1 {
		t.Errorf("%d records of kube-vip in guest A; want only the forged one: nothing upgraded over it", n)
	}
	if _, err := a.direct.AppsV1().DaemonSets("kube-system").Get(ctx, chartvalues.KubevipNameOverride, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("kube-vip's DaemonSet in guest A: %v; want none", err)
	}

	// The owner uninstalls victim, as Helm's CLI does: what runs is what victim's record holds.
	cfg := new(action.Configuration)
	if err := cfg.Init(adminGetter{a.guest.Config}, "kube-system", "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	if _, err := action.NewUninstall(cfg).Run(victim); err != nil {
		t.Errorf("uninstalling victim: %v", err)
	}
	if _, err := a.direct.RbacV1().ClusterRoleBindings().Get(ctx, binding, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRoleBinding %s after victim's uninstall: %v; want none: the forged hook ran", binding, err)
	}
	time.Sleep(time.Second)
	for _, e := range bound() {
		t.Errorf("a ClusterRoleBinding of user %s appeared: %s", user, e)
	}
	if !v1.GuestConfigured.IsTrue(f.getFIPIn(b.id, "hident-b-kubevip")) {
		t.Error("guest B is not Configured")
	}
}
