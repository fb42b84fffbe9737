package helminstall

import (
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
	trusted map[string]bool
}

func newTrustView(d driver.Driver, name string, trusted []string) *trustView {
	v := &trustView{Driver: d, name: name, trusted: map[string]bool{}}
	for _, t := range trusted {
		v.trusted[t] = true
	}
	return v
}

// trusts reports whether r's manifest is one the operator applied (an empty one lists nothing).
func (v *trustView) trusts(r *release.Release) bool {
	return r.Manifest == "" || v.trusted[guestchart.Digest([]byte(r.Manifest))]
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
	if err != nil {
		return nil, err
	}
	var out []*release.Release
	for _, r := range all {
		if shown := v.show(r); filter(shown) {
			out = append(out, shown)
		}
	}
	return out, nil
}

func (v *trustView) Query(labels map[string]string) ([]*release.Release, error) {
	all, err := v.Driver.Query(labels)
	var out []*release.Release
	for _, r := range all {
		shown := v.show(r)
		// A query by status (Helm's Deployed) must see the status shown.
		if s, ok := labels["status"]; ok && shown.Info != nil && shown.Info.Status.String() != s {
			continue
		}
		out = append(out, shown)
	}
	if err == nil && len(out) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	return out, err
}

func (v *trustView) Delete(key string) (*release.Release, error) {
	r, err := v.Driver.Delete(key)
	return v.show(r), err
}
