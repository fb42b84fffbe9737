package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/cleanup"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

// TestUninstallCleansTheGuests: `kube-fip-operator cleanup --guests=clean`, as the chart's hook
// runs it, takes out of a guest what the operator put there and nothing else: the kube-vip and
// kube-vip-cloud-provider releases it applied (objects and records), its ingress Service,
// cidr-global of the provider's ConfigMap (a key a person wrote there stays), and the node selector
// it gave the Harvester cloud provider's kube-vip. A guest it cannot reach is named in its output, and does
// not stop it; once it is done, the guest is still named in the ConfigMap it leaves in its
// namespace, which outlives the Job and its log, and the guest cleaned is not. With --guests=keep
// nothing in a guest changes, and no ConfigMap is written.
func TestUninstallCleansTheGuests(t *testing.T) {
	ctx := context.Background()
	repo := chartrepo.ChartRepoForTest(t, defaultCharts()...)
	f := newFixture(t, "kube-fip-gclean")
	proxy := f.shard.StartClusterProxy(t)
	g := f.shard.StartGuest(t, "gclean")
	if err := g.InstallHarvesterCloudProvider(); err != nil {
		t.Fatal(err)
	}
	gc := rancherCluster(t, proxy, "gclean", "c-m-gclean01", nil, g)
	gone := rancherCluster(t, proxy, "gclean-gone", "c-m-gcleangn", nil, nil)
	f.extraNamespace(gc.id)
	f.extraNamespace(gone.id)
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "1", "kubevipGuestInstall": "enabled", "kubevipChartRepoUrl": repo.URL})
	p, _ := f.operator()
	f.createRange("gclean", "10.192.0.0/28")
	f.editRange("gclean", func(r *v1.FloatingIPRange) { r.Spec.Ingress = true })
	traefik := kubevipconfig.IngressControllers()[1]
	_, err := gc.direct.CoreV1().Pods("kube-system").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rke2-traefik-x1", Labels: traefik.Selector},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "rke2-traefik", Image: "traefik"}}}}, metav1.CreateOptions{})
	rig.Must(t, err)
	ingress := func() error {
		_, err := gc.direct.CoreV1().Services(kubevipconfig.IngressNamespace).Get(ctx, kubevipconfig.IngressServiceName, metav1.GetOptions{})
		return err
	}
	f.createFIPIn(gc.id, "gclean-kubevip", "gclean", "10.192.0.2")
	f.createFIPIn(gone.id, "gclean-gone-kubevip", "gclean", "10.192.0.3")
	f.waitFIPIn(gc.id, "gclean-kubevip", 90*time.Second, "KubevipInstalled", func(x *v1.FloatingIP) bool {
		return v1.KubevipInstalled.IsTrue(x) && len(x.Status.KubevipReleases) == 2
	})
	gc.waitCIDR(t, "10.192.0.2/32", 30*time.Second)
	gc.setDaemonSetStatus(t, "kube-system", chartvalues.KubevipNameOverride, 1, 1)
	harvester := func() map[string]string {
		ds, err := gc.direct.AppsV1().DaemonSets("kube-system").Get(ctx, kubevipconfig.HarvesterDaemonSetName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ds.Spec.Template.Spec.NodeSelector
	}
	rig.Eventually(t, 30*time.Second, "Harvester's kube-vip kept off the nodes", func() bool {
		return harvester()[kubevipconfig.DisabledNodeSelectorKey] == "true"
	})
	rig.Eventually(t, 30*time.Second, "the ingress Service", func() bool { return ingress() == nil })
	// A key of a person's beside the operator's.
	cm, err := gc.direct.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubevip", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["range-team-a"] = "10.192.0.10-10.192.0.12"
	if _, err := gc.direct.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	run := func(guests string) string {
		t.Helper()
		c, err := controlplane.StartOperator(f.shard.Operator, nil, nil, "cleanup", "--kubeconfig", f.shard.Env.Kubeconfig,
			"--namespace", f.ns, "--deployment=", "--mode=keep", "--guests="+guests, "--fleet-namespace", "fleet-default")
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-c.Done():
		case <-time.After(3 * time.Minute):
			t.Fatalf("the clean-up did not end within 3 minutes:\n%s", c.Logs())
		}
		if !strings.Contains(c.Logs(), "clean-up (keep) done") {
			t.Fatalf("the clean-up did not succeed:\n%s", c.Logs())
		}
		return c.Logs()
	}

	before := helmRecords(t, gc, "")
	logs := run("keep")
	if after := helmRecords(t, gc, ""); len(after) != len(before) || gc.kubevipCIDR(t) != "10.192.0.2/32" || ingress() != nil {
		t.Errorf("--guests=keep changed the guest: %d release records (were %d), cidr-global %q, the ingress Service: %v",
			len(after), len(before), gc.kubevipCIDR(t), ingress())
	}
	if strings.Contains(logs, "guest cluster") {
		t.Errorf("--guests=keep looked at the guests:\n%s", logs)
	}
	if _, err := f.shard.Kube.CoreV1().ConfigMaps(f.ns).Get(ctx, cleanup.ReportConfigMapName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("--guests=keep: ConfigMap %s: %v; want none, nothing to report", cleanup.ReportConfigMapName, err)
	}

	logs = run("clean")
	t.Logf("the clean-up said:\n%s", grepLines(logs, "guest cluster"))
	for _, r := range helmRecords(t, gc, "") {
		if r.Labels["name"] == "kube-vip" || r.Labels["name"] == "kube-vip-cloud-provider" {
			t.Errorf("release record %s/%s left in the guest", r.Namespace, r.Name)
		}
	}
	for _, obj := range []struct{ kind, name string }{{"DaemonSet", chartvalues.KubevipNameOverride}, {"Deployment", "kube-vip-cloud-provider"}} {
		var err error
		if obj.kind == "DaemonSet" {
			_, err = gc.direct.AppsV1().DaemonSets("kube-system").Get(ctx, obj.name, metav1.GetOptions{})
		} else {
			_, err = gc.direct.AppsV1().Deployments("kube-system").Get(ctx, obj.name, metav1.GetOptions{})
		}
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s kube-system/%s after the clean-up: %v; want it gone", obj.kind, obj.name, err)
		}
	}
	cm, err = gc.direct.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubevip", metav1.GetOptions{})
	switch {
	case err != nil:
		t.Errorf("kube-system/kubevip after the clean-up: %v; want it kept with the person's key", err)
	case cm.Data[kubevipconfig.GlobalCIDRKey] != "" || cm.Data["range-team-a"] == "":
		t.Errorf("kube-system/kubevip after the clean-up: %v; want cidr-global gone and range-team-a kept", cm.Data)
	}
	if err := ingress(); !apierrors.IsNotFound(err) {
		t.Errorf("the ingress Service after the clean-up: %v; want it gone", err)
	}
	if _, still := harvester()[kubevipconfig.DisabledNodeSelectorKey]; still {
		t.Error("Harvester's kube-vip still kept off the nodes after the clean-up")
	}
	if !strings.Contains(logs, "guest cluster gclean-gone") || !strings.Contains(logs, "NOT CLEANED") {
		t.Errorf("the clean-up's output does not name the guest it could not reach:\n%s", logs)
	}
	report, err := f.shard.Kube.CoreV1().ConfigMaps(f.ns).Get(ctx, cleanup.ReportConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the list of the guests not cleaned, after the clean-up: %v", err)
	}
	guests := report.Data[cleanup.ReportKeyGuests]
	if !strings.HasPrefix(guests, "gclean-gone: not reached: ") || strings.Count(guests, "\n") != 1 || report.Data[cleanup.ReportKeyMode] != "keep" {
		t.Errorf("ConfigMap %s/%s: %v; want one line naming gclean-gone, the guest not reached, and the mode keep", f.ns, report.Name, report.Data)
	}
}
