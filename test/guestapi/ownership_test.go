package guestapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"

	"github.com/kubefip/kube-fip-operator/pkg/helminstall"
)

// TestForeignReleasesAreLeftAlone: with kubevipReleaseName naming the Harvester cloud provider's
// release and kubevipUpdate on, the release is not upgraded to kube-vip (which would delete the
// cloud provider): it holds another chart, so pass after pass it is left alone — its records, its
// Deployment and Harvester's kube-vip DaemonSet as they were — and no kube-vip is put beside it.
func TestForeignReleasesAreLeftAlone(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.client(t, "token-1")
	if err := r.server.InstallHarvesterCloudProvider(); err != nil {
		t.Fatal(err)
	}
	// What the release holds, by resourceVersion: its records and its workloads.
	state := func() map[string]string {
		out := map[string]string{}
		secrets, err := r.direct.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets.Items {
			out["Secret "+s.Name] = s.ResourceVersion
		}
		d, err := r.direct.AppsV1().Deployments("kube-system").Get(ctx, controlplane.HarvesterRelease, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the Harvester cloud provider's Deployment: %v", err)
		}
		ds, err := r.direct.AppsV1().DaemonSets("kube-system").Get(ctx, kubevipconfig.HarvesterDaemonSetName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Harvester's kube-vip DaemonSet: %v", err)
		}
		out["Deployment"], out["DaemonSet"] = d.ResourceVersion, ds.ResourceVersion
		return out
	}
	before := state()
	repo := chartrepo.ChartRepoForTest(t, chartrepo.KubevipChart("0.9.9"))
	in := newInstaller(t)
	rel := helminstall.Release{Namespace: "kube-system", Name: controlplane.HarvesterRelease, Chart: "kube-vip", RepoURL: repo.URL, Version: "0.9.9", Update: true,
		Plan: testPlan(t, guestchart.Kubevip, "0.9.9", nil)}
	var foreign *helminstall.ForeignRelease
	for pass := 1; pass <= 2; pass++ {
		if out, err := ensureRelease(in, ctx, c, rel); !errors.As(err, &foreign) || foreign.Chart != controlplane.HarvesterRelease {
			t.Fatalf("pass %d: Ensure over the Harvester cloud provider's release = %v, %v; want ForeignRelease", pass, out, err)
		}
	}
	if after := state(); !reflect.DeepEqual(after, before) {
		t.Errorf("the Harvester release and its workloads were %v, now %v", before, after)
	}
	if _, err := in.ProviderConfigMap(ctx, c, "kube-system", controlplane.HarvesterRelease); !errors.As(err, &foreign) {
		t.Errorf("ProviderConfigMap followed a foreign release: %v", err)
	}
}

// TestForgedRecordRunsNoHook: a release record forged in the guest with a pre-delete hook and a
// manifest naming objects of others is never the base of what the operator does: stuck in
// pending-install it is recovered, and deployed with Update on it is upgraded, each without
// running the hook or deleting anything its manifest names.
func TestForgedRecordRunsNoHook(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.client(t, "token-1")
	repo := chartrepo.ChartRepoForTest(t, chartrepo.KubevipChart("0.9.9"))
	in := newInstaller(t)
	cfg := r.helm(t)
	for _, tc := range []struct {
		name    string
		version int
		status  release.Status
		update  bool
		want    helminstall.Outcome
	}{
		{"kube-vip", 99, release.StatusPendingInstall, false, helminstall.Recovered},
		{"kube-vip", 101, release.StatusDeployed, true, helminstall.Upgraded}, // over the release the first case made
	} {
		hookName := fmt.Sprintf("forged-hook-ran-%d", tc.version)
		hook := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + hookName + "\n  namespace: kube-system\n"
		forged := &release.Release{Name: tc.name, Namespace: "kube-system", Version: tc.version, Chart: chartrepo.KubevipChart("0.9.9"),
			Info: &release.Info{Status: tc.status, LastDeployed: helmtime.Unix(0, 0)},
			Hooks: []*release.Hook{{Name: hookName, Kind: "ConfigMap", Path: "kube-vip/templates/hook.yaml", Manifest: hook,
				Events: []release.HookEvent{release.HookPreDelete}}}}
		victims := []*corev1.ConfigMap{
			{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("someone-elses-%d", tc.version), Namespace: "kube-system"}},
			{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("in-default-%d", tc.version), Namespace: "default"}},
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
		rel := helminstall.Release{Namespace: "kube-system", Name: tc.name, Chart: "kube-vip", RepoURL: repo.URL, Version: "0.9.9", Update: tc.update,
			Plan: testPlan(t, guestchart.Kubevip, "0.9.9", nil)}
		if out, err := ensureRelease(in, ctx, c, rel); err != nil || out != tc.want {
			t.Fatalf("Ensure over a forged %s record = %v, %v; want %s", tc.status, out, err, tc.want)
		}
		if _, err := r.direct.CoreV1().ConfigMaps("kube-system").Get(ctx, hookName, metav1.GetOptions{}); err == nil {
			t.Errorf("%s: the forged record's pre-delete hook ran", tc.status)
		}
		for _, v := range victims {
			if _, err := r.direct.CoreV1().ConfigMaps(v.Namespace).Get(ctx, v.Name, metav1.GetOptions{}); err != nil {
				t.Errorf("%s: ConfigMap %s/%s, named in the forged record's manifest: %v; want it left alone", tc.status, v.Namespace, v.Name, err)
			}
		}
		last, err := cfg.Releases.Last(tc.name)
		if err != nil || last.Version != tc.version+1 || last.Labels[helminstall.OwnerLabel] == "" {
			t.Errorf("%s: the new release = %v, %v; want revision %d labelled %s", tc.status, last, err, tc.version+1, helminstall.OwnerLabel)
		}
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
	in := newInstaller(t)
	rel := helminstall.Release{Namespace: "kube-system", Name: "kube-vip", Chart: "kube-vip", RepoURL: "http://127.0.0.1:1", Version: "0.9.9",
		Plan: testPlan(t, guestchart.Kubevip, "0.9.9", nil)}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := in.Ensure(ctx, c, rel)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, helminstall.ErrReleaseRecordTooLarge) {
		t.Fatalf("Ensure over a %d KiB record of 200 MiB = %v; want ErrReleaseRecordTooLarge", gz.Len()/1024, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 100<<20 {
		t.Errorf("reading the planted record allocated %d MiB", grew>>20)
	}
	t.Logf("a %d KiB record expanding to 200 MiB: %v (%d MiB allocated)", gz.Len()/1024, err, (after.TotalAlloc-before.TotalAlloc)>>20)
}
