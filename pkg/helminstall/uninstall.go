package helminstall

import (
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/action"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/approve"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// ErrNotTrusted means a release's newest record is none the operator applied, as the management
// side remembers them: it is left in place, and nothing it lists is deleted.
var ErrNotTrusted = errors.New("its newest record holds a manifest the operator did not apply")

// Removed says what Uninstall did.
type Removed string

const (
	// RemovedRelease: the release's objects and records are gone.
	RemovedRelease Removed = "uninstalled"
	// RemovedNothing: there was no release of that name.
	RemovedNothing Removed = "absent"
)

// Uninstall removes release namespace/name of chart from the guest with Helm's uninstall, hooks
// off, only when its newest record is the operator's own: a record whose identity holds (see the
// release driver) and whose manifest is one of trusted, the digests the management side
// remembers the operator applied. Helm then deletes only what that manifest lists, and a guard
// under its client lets no delete through but of the objects the chart may own in namespace. A
// record the operator did not write is left alone (ErrNotTrusted), as is a release of another
// chart (*ForeignRelease).
func (in *Installer) Uninstall(ctx context.Context, c *guest.Client, chart guestchart.Chart, namespace, name string, trusted []string) (Removed, error) {
	records := newBoundedSecrets(c.Core.Secrets(namespace), namespace, name)
	last, err := lastRecord(records, string(chart))
	switch {
	case err != nil:
		return "", err
	case last == nil:
		return RemovedNothing, nil
	}
	view := newTrustView(records, name, trusted)
	if last.Manifest == "" || !view.trusts(last) {
		return "", fmt.Errorf("release %s/%s is left in place: %w", namespace, name, ErrNotTrusted)
	}
	cfg, err := in.configuration(c, namespace, view, &approve.Approval{Owned: approve.Owned(chart, namespace)})
	if err != nil {
		return "", err
	}
	un := action.NewUninstall(cfg)
	un.DisableHooks, un.Timeout = true, InstallTimeout
	if _, err := un.Run(name); err != nil {
		return "", fmt.Errorf("uninstalling %s/%s: %w", namespace, name, err)
	}
	return RemovedRelease, nil
}
