package guestapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"runtime"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"

	"github.com/kubefip/kube-fip-operator/pkg/helminstall"
)

// TestForeignReleasesAreLeftAlone: with kubevipReleaseName naming the Harvester cloud provider's
// release and kubevipUpdate on, the release is not upgraded to kube-vip (which would delete the
// cloud provider): it holds another chart, so it is left alone, its objects too.
func TestForeignReleasesAreLeftAlone(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.client(t, "token-1")
	if err := r.server.InstallHarvesterCloudProvider(); err != nil {
		t.Fatal(err)
	}
	repo := chartrepo.ChartRepoForTest(t, chartrepo.KubevipChart("0.9.9"))
	in, err := helminstall.NewInstaller(t.TempDir(), helminstall.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	rel := helminstall.Release{Namespace: "kube-system", Name: controlplane.HarvesterRelease, Chart: "kube-vip", RepoURL: repo.URL, Version: "0.9.9", Update: true,
		Plan: testPlan(t, guestchart.Kubevip, "0.9.9", nil)}
	var foreign *helminstall.ForeignRelease
	if out, err := ensureRelease(in, ctx, c, rel); !errors.As(err, &foreign) || foreign.Chart != controlplane.HarvesterRelease {
		t.Fatalf("Ensure over the Harvester cloud provider's release = %v, %v; want ForeignRelease", out, err)
	}
	if _, err := r.direct.AppsV1().Deployments("kube-system").Get(ctx, "harvester-cloud-provider", metav1.GetOptions{}); err != nil {
		t.Errorf("the Harvester cloud provider's Deployment: %v", err)
	}
	if _, err := in.ProviderConfigMap(ctx, c, "kube-system", controlplane.HarvesterRelease); !errors.As(err, &foreign) {
		t.Errorf("ProviderConfigMap followed a foreign release: %v", err)
	}
}

// TestForgedRecordRunsNoHook: a release record stuck in pending-install, forged in the guest with
// a pre-delete hook and a manifest naming objects of others, is recovered without running the
// hook or deleting anything its manifest names.
func TestForgedRecordRunsNoHook(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.client(t, "token-1")
	repo := chartrepo.ChartRepoForTest(t, chartrepo.KubevipChart("0.9.9"))
	in, err := helminstall.NewInstaller(t.TempDir(), helminstall.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	cfg := r.helm(t)
	hook := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: forged-hook-ran\n  namespace: kube-system\n"
	forged := &release.Release{Name: "kube-vip", Namespace: "kube-system", Version: 99, Chart: chartrepo.KubevipChart("0.9.9"),
		Info: &release.Info{Status: release.StatusPendingInstall, LastDeployed: helmtime.Unix(0, 0)},
		Hooks: []*release.Hook{{Name: "forged-hook-ran", Kind: "ConfigMap", Path: "kube-vip/templates/hook.yaml", Manifest: hook,
			Events: []release.HookEvent{release.HookPreDelete}}}}
	victims := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses", Namespace: "kube-system"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "in-default", Namespace: "default"}},
	}
	for _, v := range victims {
		if _, err := r.direct.CoreV1().ConfigMaps(v.Namespace).Create(ctx, v, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		forged.Manifest += "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + v.Name + "\n  namespace: " + v.Namespace + "\n"
	}
	if err := cfg.Releases.Create(forged); err != nil {
		t.Fatal(err)
	}
	rel := helminstall.Release{Namespace: "kube-system", Name: "kube-vip", Chart: "kube-vip", RepoURL: repo.URL, Version: "0.9.9",
		Plan: testPlan(t, guestchart.Kubevip, "0.9.9", nil)}
	if out, err := ensureRelease(in, ctx, c, rel); err != nil || out != helminstall.Recovered {
		t.Fatalf("Ensure over a forged pending-install record = %v, %v; want recovered", out, err)
	}
	if _, err := r.direct.CoreV1().ConfigMaps("kube-system").Get(ctx, "forged-hook-ran", metav1.GetOptions{}); err == nil {
		t.Error("the forged record's pre-delete hook ran")
	}
	for _, v := range victims {
		if _, err := r.direct.CoreV1().ConfigMaps(v.Namespace).Get(ctx, v.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("ConfigMap %s/%s, named in the forged record's manifest: %v; want it left alone", v.Namespace, v.Name, err)
		}
	}
	last, err := cfg.Releases.Last("kube-vip")
	if err != nil || last.Labels[helminstall.OwnerLabel] == "" {
		t.Errorf("the new release = %v, %v; want it labelled %s", last, err, helminstall.OwnerLabel)
	}
}

// TestPlantedReleaseRecordIsReadWithinBounds: a record planted in the guest whose gzip expands to
// 200 MiB is refused after at most MaxReleaseJSON of it, not read whole; the next pass is no
// worse off.
func TestPlantedReleaseRecordIsReadWithinBounds(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.client(t, "token-1")
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for i := 0; i < 200; i++ {
		_, _ = w.Write(zeros)
	}
	_ = w.Close()
	bomb := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.kube-vip.v1", Namespace: "kube-system",
			Labels: map[string]string{"owner": "helm", "name": "kube-vip", "status": "deployed", "version": "1"}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))},
	}
	if _, err := r.direct.CoreV1().Secrets("kube-system").Create(ctx, bomb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	in, err := helminstall.NewInstaller(t.TempDir(), helminstall.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	rel := helminstall.Release{Namespace: "kube-system", Name: "kube-vip", Chart: "kube-vip", RepoURL: "http://127.0.0.1:1", Version: "0.9.9",
		Plan: testPlan(t, guestchart.Kubevip, "0.9.9", nil)}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = in.Ensure(ctx, c, rel)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, helminstall.ErrReleaseRecordTooLarge) {
		t.Fatalf("Ensure over a %d KiB record of 200 MiB = %v; want ErrReleaseRecordTooLarge", gz.Len()/1024, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 100<<20 {
		t.Errorf("reading the planted record allocated %d MiB", grew>>20)
	}
	t.Logf("a %d KiB record expanding to 200 MiB: %v (%d MiB allocated)", gz.Len()/1024, err, (after.TotalAlloc-before.TotalAlloc)>>20)
}
