package helminstall

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/action"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/approve"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
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

// Removal is what RemoveReleases did in one guest.
type Removal struct {
	// Done lists what was taken out, Problems what could not be (redacted), and Left the releases
	// that stay, the problems' among them.
	Done, Problems []string
	Left           []v1.GuestRelease
}

// RemoveReleases takes out of the guest the releases the operator remembers applying there, each
// only as Uninstall allows (its newest record the operator's, of the digest remembered), kube-vip's
// first so that nothing announces an address without a provider behind it, then the operator's copy
// of the image pull Secret in each of their namespaces once no release of it is left there.
func (in *Installer) RemoveReleases(ctx context.Context, c *guest.Client, releases []v1.GuestRelease) Removal {
	var out Removal
	ordered := slices.Clone(releases)
	// kube-vip before the provider: the addresses stop being announced first.
	sort.SliceStable(ordered, func(i, j int) bool {
		return ChartOf(ordered[i]) == guestchart.Kubevip && ChartOf(ordered[j]) != guestchart.Kubevip
	})
	for _, r := range ordered {
		removed, err := in.Uninstall(ctx, c, ChartOf(r), r.Namespace, r.Name, []string{r.ManifestDigest})
		switch {
		case err != nil:
			out.Problems = append(out.Problems, c.Redact(err.Error()))
			out.Left = append(out.Left, r)
		case removed == RemovedRelease:
			out.Done = append(out.Done, fmt.Sprintf("release %s/%s uninstalled", r.Namespace, r.Name))
		}
	}
	for _, ns := range releaseNamespaces(ordered) {
		if slices.ContainsFunc(out.Left, func(r v1.GuestRelease) bool { return r.Namespace == ns }) {
			continue
		}
		switch removed, err := kubevipconfig.RemovePullSecret(ctx, c.Core, ns, imagepolicy.GuestPullSecretName); {
		case err != nil:
			out.Problems = append(out.Problems, c.Redact(err.Error()))
		case removed:
			out.Done = append(out.Done, fmt.Sprintf("image pull Secret %s/%s removed", ns, imagepolicy.GuestPullSecretName))
		}
	}
	return out
}

// releaseNamespaces are the namespaces of releases, each once.
func releaseNamespaces(releases []v1.GuestRelease) []string {
	var out []string
	for _, r := range releases {
		if !slices.Contains(out, r.Namespace) {
			out = append(out, r.Namespace)
		}
	}
	return out
}

// ChartOf is the chart of a remembered release, by the chart name it was applied with.
func ChartOf(r v1.GuestRelease) guestchart.Chart {
	if strings.HasPrefix(r.Chart, string(guestchart.CloudProvider)) {
		return guestchart.CloudProvider
	}
	return guestchart.Kubevip
}
