package helminstall

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/client-go/rest"
	"k8s.io/kubectl/pkg/validation"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/approve"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/render"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
)

// Result says what Ensure did and what is in place.
type Result struct {
	Outcome Outcome
	// Applied is the release as it stands once Ensure is done, when the operator knows it to be
	// its own: what the management side is to remember. Nil when the release was left as it was
	// without being judged (kubevipUpdate off).
	Applied *Applied
	// Untrusted describes the guest's release record that was not used as the base of the
	// upgrade, because its manifest is none the operator applied; "" when there was none.
	Untrusted string
	// Restored names the objects of the deployed revision that were missing or changed in the
	// guest and were put back (Outcome Restored), each with how it had departed.
	Restored []string
	// Approval is what the policy approved, when Ensure rendered the chart.
	Approval *approve.Approval
}

// Applied is one release the operator applied: its revision and the digest of its manifest.
type Applied struct {
	Revision int
	Digest   string
}

// Ensure makes rel installed in the guest: installed when missing; upgraded over a record that is
// pending (for longer than InstallTimeout), failed, or not the operator's own; upgraded when
// allowed and what it would apply differs from what is there; else kept at its revision, with
// what the guest lost of it put back (restore). What Helm applies is only what rel.Plan approved,
// or the revision the operator applied earlier, and nothing a guest's record lists is acted on
// unless its manifest is one the operator applied.
func (in *Installer) Ensure(ctx context.Context, c *guest.Client, rel Release) (Result, error) {
	if rel.Plan == nil {
		return Result{}, errors.New("no install plan: nothing is installed")
	}
	records := newBoundedSecrets(c.Core.Secrets(rel.Namespace), rel.Namespace, rel.Name)
	last, err := lastRecord(records, rel.chartName())
	if err != nil {
		return Result{}, err
	}
	if last != nil {
		if last.Info.Status.IsPending() && time.Since(last.Info.LastDeployed.Time) < InstallTimeout {
			return Result{}, fmt.Errorf("release %s/%s is %s since %s: %w", rel.Namespace, rel.Name, last.Info.Status,
				last.Info.LastDeployed.UTC().Format(time.RFC3339), ErrReleaseBusy)
		}
		if last.Info.Status == release.StatusDeployed && !rel.Update {
			// Kept at its revision: only a record the operator applied is restored.
			return in.keep(c, rel, records, last, rel.Trusted, Result{Outcome: Unchanged})
		}
	}
	pkg, err := in.chart(ctx, rel)
	if err != nil {
		return Result{}, err
	}
	target := render.Target{Name: rel.Name, Namespace: rel.Namespace, Revision: 1}
	if last != nil {
		target.Revision, target.Upgrade = last.Version+1, true
	}
	approval, err := rel.Plan.Approve(pkg.Chart, target)
	if err != nil {
		return Result{}, err
	}
	view := newTrustView(records, rel.Name, append(slices.Clip(rel.Trusted), approval.Digest))
	result := Result{Approval: approval}
	if last == nil {
		result.Outcome = Installed
	} else {
		base, err := upgradeBase(records, rel.Name, last)
		if err != nil {
			return Result{}, fmt.Errorf("reading release %s/%s: %w", rel.Namespace, rel.Name, err)
		}
		if last.Info.Status == release.StatusDeployed && guestchart.Digest([]byte(last.Manifest)) == approval.Digest {
			return in.keep(c, rel, records, last, []string{approval.Digest},
				Result{Outcome: Unchanged, Applied: &Applied{Revision: last.Version, Digest: approval.Digest}, Approval: approval})
		}
		if !view.trusts(base) {
			result.Untrusted = fmt.Sprintf("release record %s/sh.helm.release.v1.%s.v%d (%s)", rel.Namespace, rel.Name, base.Version, base.Info.Status)
		}
		result.Outcome = Upgraded
		if last.Info.Status != release.StatusDeployed {
			result.Outcome = Recovered
		}
	}
	cfg, err := in.configuration(c, rel.Namespace, view, approval)
	if err != nil {
		return Result{}, err
	}
	if err := apply(ctx, cfg, rel, pkg.Chart, approval, last == nil); err != nil {
		return Result{}, err
	}
	result.Applied = &Applied{Revision: target.Revision, Digest: approval.Digest}
	return result, nil
}

// keep is Ensure's result when the deployed revision last stays: result, or Restored with what
// was put back of last when it is one of trusted.
func (in *Installer) keep(c *guest.Client, rel Release, records *boundedSecrets, last *release.Release, trusted []string, result Result) (Result, error) {
	restored, err := in.restore(c, rel, records, last, trusted, result)
	if err != nil {
		return Result{}, err
	}
	if len(restored) > 0 {
		result.Outcome, result.Restored = Restored, restored
		result.Applied = &Applied{Revision: last.Version, Digest: guestchart.Digest([]byte(last.Manifest))}
	}
	return result, nil
}

// apply has Helm install or upgrade rel with the approved manifest. Helm is given the chart's
// metadata and nothing of its templates, which the render process executed within its budget: no
// template runs in the operator's process, and what Helm applies is the approved manifest
// (approvedManifest), whatever Helm's engine would have made of them.
func apply(ctx context.Context, cfg *action.Configuration, rel Release, ch *chart.Chart, approval *approve.Approval, install bool) error {
	bare := &chart.Chart{Metadata: ch.Metadata}
	// No hook runs, no CRD is installed, nor is the guest's OpenAPI read: the policy decoded every
	// object strictly, and the values were judged by its schema.
	if install {
		a := action.NewInstall(cfg)
		a.Namespace, a.ReleaseName, a.CreateNamespace, a.Timeout = rel.Namespace, rel.Name, true, InstallTimeout
		a.DisableHooks, a.SkipCRDs, a.SkipSchemaValidation, a.DisableOpenAPIValidation = true, true, true, true
		a.PostRenderer, a.Labels = approvedManifest(approval.Manifest), ownedLabels()
		if _, err := a.RunWithContext(ctx, bare, rel.Plan.Values.Map); err != nil {
			return fmt.Errorf("installing %s from %s: %w", rel.Name, rel.source(), err)
		}
		return nil
	}
	a := action.NewUpgrade(cfg)
	a.Namespace, a.MaxHistory, a.Timeout = rel.Namespace, 5, InstallTimeout
	a.DisableHooks, a.SkipCRDs, a.SkipSchemaValidation, a.DisableOpenAPIValidation = true, true, true, true
	a.PostRenderer, a.Labels = approvedManifest(approval.Manifest), ownedLabels()
	if _, err := a.RunWithContext(ctx, rel.Name, bare, rel.Plan.Values.Map); err != nil {
		return fmt.Errorf("upgrading %s to %s %s: %w", rel.Name, rel.source(), ch.Metadata.Version, err)
	}
	return nil
}

// lastRecord is the newest record of the release records serve, or nil; a record of another chart
// than chart is a *ForeignRelease.
func lastRecord(records *boundedSecrets, chart string) (*release.Release, error) {
	last, err := storage.Init(records).Last(records.release)
	switch {
	case errors.Is(err, driver.ErrReleaseNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading release %s/%s: %w", records.namespace, records.release, err)
	}
	return last, owns(records.namespace, records.release, chart, last)
}

// upgradeBase is the record Helm's upgrade diffs against: last when it is deployed, else the
// newest deployed one, else last.
func upgradeBase(records driver.Driver, name string, last *release.Release) (*release.Release, error) {
	if last.Info.Status == release.StatusDeployed {
		return last, nil
	}
	deployed, err := storage.Init(records).Deployed(name)
	switch {
	case errors.Is(err, driver.ErrNoDeployedReleases), errors.Is(err, driver.ErrReleaseNotFound):
		return last, nil
	case err != nil:
		return nil, err
	}
	return deployed, nil
}

// configuration is a Helm action configuration for namespace of the guest: releases read and
// written through view, the Kubernetes client under the write guard of approval, the capabilities
// the policy renders with, and templates that cannot read the guest (lookup).
func (in *Installer) configuration(c *guest.Client, namespace string, view driver.Driver, approval *approve.Approval) (*action.Configuration, error) {
	cfg := new(action.Configuration)
	debug := func(format string, v ...interface{}) {
		logrus.Debugf("helm in %s/%s: %s", c.Name, namespace, c.Redact(fmt.Sprintf(format, v...)))
	}
	server, err := url.Parse(c.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("preparing Helm for %s: %w", c.Name, err)
	}
	guarded := rest.CopyConfig(c.Config)
	guarded.Wrap(guardFor(approval, namespace, server.Path))
	if err := cfg.Init(NewRESTClientGetter(guarded, namespace), namespace, "secret", debug); err != nil {
		return nil, fmt.Errorf("preparing Helm for %s: %w", c.Name, err)
	}
	store := storage.Init(view)
	store.Log = debug
	cfg.Releases = store
	cfg.Capabilities = render.Capabilities()
	kc, ok := cfg.KubeClient.(*kube.Client)
	if !ok {
		return nil, fmt.Errorf("preparing Helm for %s: unexpected Kubernetes client %T", c.Name, cfg.KubeClient)
	}
	kc.Factory = unvalidated{kc.Factory}
	// The engine's lookup reaches the guest through this getter only; it refuses every request.
	cfg.RESTClientGetter = NewRESTClientGetter(&rest.Config{Host: "https://lookup.invalid", Transport: refuse{errLookup}}, namespace)
	return cfg, nil
}

// errLookup answers a chart template's lookup: it reads nothing of the guest.
var errLookup = errors.New("a chart template may not read the guest cluster (lookup)")

// unvalidated is Helm's Kubernetes client factory without client-side schema validation, which
// would download the guest's OpenAPI documents: unbounded work fed by the guest. Helm asks for it
// when it creates the release's namespace whatever DisableOpenAPIValidation says. The install
// policy has decoded every object strictly, as the API server does, before Helm sees it.
type unvalidated struct{ kube.Factory }

func (unvalidated) Validator(string) (validation.Schema, error) { return validation.NullSchema{}, nil }

// approvedManifest is Helm's post-renderer: whatever Helm rendered, what it applies is the
// manifest the policy approved.
type approvedManifest string

func (m approvedManifest) Run(*bytes.Buffer) (*bytes.Buffer, error) {
	return bytes.NewBufferString(string(m)), nil
}
