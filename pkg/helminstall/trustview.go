package helminstall

import (
	"slices"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// trustView is the guest's release storage as Helm is shown it. A guest is untrusted, and so are
// the release records it stores: a record whose manifest is not one the operator applied (its
// digest is not among trusted) is shown without its manifest and hooks, so that Helm never runs its
// hooks nor deletes what its manifest lists when it upgrades from it; and a record in a state Helm
// would stop at (pending, uninstalling) is shown as failed, so that the upgrade goes on over it.
// The driver below has refused every record whose identity is not consistent (see
// checkIdentity), so a record shown is the release's own revision, whoever wrote it. Writes are
// Helm's own, and the driver takes only the release's records.
type trustView struct {
	driver.Driver
	name    string
	trusted []string
}

func newTrustView(d driver.Driver, name string, trusted []string) *trustView {
	return &trustView{Driver: d, name: name, trusted: trusted}
}

// trusts reports whether r's manifest is one the operator applied (an empty one lists nothing).
func (v *trustView) trusts(r *release.Release) bool {
	return r.Manifest == "" || slices.Contains(v.trusted, guestchart.Digest([]byte(r.Manifest)))
}

// show is r as Helm sees it.
func (v *trustView) show(r *release.Release) *release.Release {
	if r == nil || r.Name != v.name {
		return r
	}
	out := *r
	if !v.trusts(r) {
		out.Manifest, out.Hooks = "", nil
	}
	if r.Info != nil {
		info := *r.Info
		switch info.Status {
		case release.StatusDeployed, release.StatusSuperseded, release.StatusFailed:
		default:
			info.Status = release.StatusFailed
		}
		out.Info = &info
	}
	return &out
}

func (v *trustView) Get(key string) (*release.Release, error) {
	r, err := v.Driver.Get(key)
	return v.show(r), err
}

func (v *trustView) List(filter func(*release.Release) bool) ([]*release.Release, error) {
	all, err := v.Driver.List(func(*release.Release) bool { return true })
	return v.showAll(all, filter), err
}

func (v *trustView) Query(labels map[string]string) ([]*release.Release, error) {
	all, err := v.Driver.Query(labels)
	// A query by status (Helm's Deployed) must see the status shown.
	status, byStatus := labels["status"]
	out := v.showAll(all, func(r *release.Release) bool { return !byStatus || r.Info == nil || r.Info.Status.String() == status })
	if err == nil && len(out) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	return out, err
}

// showAll is every record of all as Helm sees it that keep keeps.
func (v *trustView) showAll(all []*release.Release, keep func(*release.Release) bool) []*release.Release {
	for i, r := range all {
		all[i] = v.show(r)
	}
	return slices.DeleteFunc(all, func(r *release.Release) bool { return !keep(r) })
}

func (v *trustView) Delete(key string) (*release.Release, error) {
	r, err := v.Driver.Delete(key)
	return v.show(r), err
}
