package guest

import (
	"context"
	"errors"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/pkg/testenv"
)

// TestForeignReleasesAreLeftAlone: with kubevipReleaseName naming the Harvester cloud provider's
// release and kubevipUpdate on, the release is not upgraded to kube-vip (which would delete the
// cloud provider): it holds another chart, so it is left alone, its objects too.
func TestForeignReleasesAreLeftAlone(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.client(t, "token-1")
	if err := r.guest.InstallHarvesterCloudProvider(); err != nil {
		t.Fatal(err)
	}
	repo := testenv.ChartRepoForTest(t, testenv.KubevipChart("0.9.9"))
	in, err := NewInstaller(t.TempDir(), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	rel := Release{Namespace: "kube-system", Name: testenv.HarvesterRelease, Chart: "kube-vip", RepoURL: repo.URL, Version: "0.9.9", Update: true}
	var foreign *ForeignRelease
	if out, err := in.Ensure(ctx, c, rel); !errors.As(err, &foreign) || foreign.Chart != testenv.HarvesterRelease {
		t.Fatalf("Ensure over the Harvester cloud provider's release = %v, %v; want ForeignRelease", out, err)
	}
	if _, err := r.direct.AppsV1().Deployments("kube-system").Get(ctx, "harvester-cloud-provider", metav1.GetOptions{}); err != nil {
		t.Errorf("the Harvester cloud provider's Deployment: %v", err)
	}
	if _, err := in.ProviderConfigMap(ctx, c, "kube-system", testenv.HarvesterRelease); !errors.As(err, &foreign) {
		t.Errorf("ProviderConfigMap followed a foreign release: %v", err)
	}
}

// TestForgedRecordRunsNoHook: a release record stuck in pending-install, forged in the guest with
// a pre-delete hook, is recovered without running the hook.
func TestForgedRecordRunsNoHook(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.client(t, "token-1")
	repo := testenv.ChartRepoForTest(t, testenv.KubevipChart("0.9.9"))
	in, err := NewInstaller(t.TempDir(), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	cfg := new(action.Configuration)
	if err := cfg.Init(&restClientGetter{config: r.guest.Config, namespace: "kube-system"}, "kube-system", "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	hook := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: forged-hook-ran\n  namespace: kube-system\n"
	forged := &release.Release{Name: "kube-vip", Namespace: "kube-system", Version: 99, Chart: testenv.KubevipChart("0.9.9"),
		Info: &release.Info{Status: release.StatusPendingInstall, LastDeployed: helmtime.Unix(0, 0)},
		Hooks: []*release.Hook{{Name: "forged-hook-ran", Kind: "ConfigMap", Path: "kube-vip/templates/hook.yaml", Manifest: hook,
			Events: []release.HookEvent{release.HookPreDelete}}}}
	if err := cfg.Releases.Create(forged); err != nil {
		t.Fatal(err)
	}
	rel := Release{Namespace: "kube-system", Name: "kube-vip", Chart: "kube-vip", RepoURL: repo.URL, Version: "0.9.9"}
	if out, err := in.Ensure(ctx, c, rel); err != nil || out != Recovered {
		t.Fatalf("Ensure over a forged pending-install record = %v, %v; want recovered", out, err)
	}
	if _, err := r.direct.CoreV1().ConfigMaps("kube-system").Get(ctx, "forged-hook-ran", metav1.GetOptions{}); err == nil {
		t.Error("the forged record's pre-delete hook ran")
	}
	last, err := cfg.Releases.Last("kube-vip")
	if err != nil || last.Labels[OwnerLabel] == "" {
		t.Errorf("the new release = %v, %v; want it labelled %s", last, err, OwnerLabel)
	}
}
