package helminstall

import (
	"testing"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// TestTrustViewShowsOnlyTheOperatorsManifests: Helm, reading the guest's records through the
// view, sees the manifest and hooks only of records whose manifest the operator applied; a
// planted one is shown without them, and a stuck one as failed, so an upgrade goes on over it and
// deletes and runs nothing it holds. Other releases' records are shown as they are.
func TestTrustViewShowsOnlyTheOperatorsManifests(t *testing.T) {
	mem := driver.NewMemory()
	mem.SetNamespace("kube-system")
	ours := "---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: kube-fip-kube-vip\n"
	planted := "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: coredns\n"
	hook := []*release.Hook{{Name: "x", Kind: "Job", Events: []release.HookEvent{release.HookPreDelete}}}
	records := storage.Init(mem)
	for _, r := range []*release.Release{
		{Name: "kube-vip", Namespace: "kube-system", Version: 1, Manifest: ours, Info: &release.Info{Status: release.StatusDeployed, LastDeployed: helmtime.Now()}},
		{Name: "kube-vip", Namespace: "kube-system", Version: 2, Manifest: planted, Hooks: hook, Info: &release.Info{Status: release.StatusPendingUpgrade, LastDeployed: helmtime.Now()}},
		{Name: "other", Namespace: "kube-system", Version: 1, Manifest: planted, Hooks: hook, Info: &release.Info{Status: release.StatusDeployed, LastDeployed: helmtime.Now()}},
	} {
		if err := records.Create(r); err != nil {
			t.Fatal(err)
		}
	}
	view := storage.Init(newTrustView(mem, "kube-vip", []string{guestchart.Digest([]byte(ours))}))
	last, err := view.Last("kube-vip")
	if err != nil || last.Version != 2 || last.Manifest != "" || last.Hooks != nil || last.Info.Status != release.StatusFailed {
		t.Errorf("the planted newest record as shown: %+v, %v; want revision 2, failed, without manifest or hooks", last, err)
	}
	deployed, err := view.Deployed("kube-vip")
	if err != nil || deployed.Version != 1 || deployed.Manifest != ours {
		t.Errorf("the deployed record as shown: %+v, %v; want the operator's, manifest and all", deployed, err)
	}
	other, err := view.Last("other")
	if err != nil || other.Manifest != planted || other.Hooks == nil {
		t.Errorf("another release's record as shown: %+v, %v; want it as stored", other, err)
	}
	// What the view shows is a copy: the stored record is what was planted, until Helm writes it.
	stored, err := records.Get("kube-vip", 2)
	if err != nil || stored.Manifest != planted || stored.Info.Status != release.StatusPendingUpgrade {
		t.Errorf("the stored planted record: %+v, %v; want it unchanged by reading", stored, err)
	}
}
