package helminstall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
	"github.com/kubefip/kube-fip-operator/pkg/outbound"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// Release is a Helm release the operator keeps installed in a guest cluster.
type Release struct {
	Namespace string
	Name      string
	// Chart is the chart's name in the repository at RepoURL, or, when Ref is set, ignored.
	Chart   string
	RepoURL string
	// Ref is an OCI reference (oci://host/path/chart); it wins over RepoURL.
	Ref     string
	Version string
	// Plan is what the install policy accepted of the configuration: the values Helm is given,
	// and the judge of what the chart renders. Without one nothing is installed.
	Plan *installpolicy.Plan
	// Update lets an installed release be upgraded when what it would apply differs.
	Update bool
	// Trusted are the digests (approve.Approval.Digest) of the manifests the operator applied to this
	// release, as the management side remembers them: only a record in the guest with one of these
	// manifests (or the one about to be applied) is used as the base of an upgrade.
	Trusted []string
	// Credentials, when set, authenticate to the chart repository or OCI registry.
	Credentials *Credentials
	// Sources decides where the fetch may be redirected and where the index may list the archive;
	// nil confines both to the chart source's own scheme, host and port.
	Sources Sources
}

// Credentials authenticate to a chart repository or an OCI registry. They come from a Secret named
// at deployment level, never from a URL, and are never written to a message, an Event or a log.
type Credentials struct {
	Username string
	Password string
}

// location is where the chart comes from, as configured; it keys the chart cache.
func (r Release) location() string {
	if r.Ref != "" {
		return r.Ref
	}
	return strings.TrimSuffix(r.RepoURL, "/") + "/" + r.Chart
}

// source is the chart's location for messages, without any credentials a URL may carry.
func (r Release) source() string { return redact.URL(r.location()) }

// Outcome says what Ensure did.
type Outcome string

const (
	Installed Outcome = "installed"
	Upgraded  Outcome = "upgraded"
	Unchanged Outcome = "unchanged"
	// Recovered: the release was stuck in a pending state and was brought back.
	Recovered Outcome = "recovered"
	// Restored: the deployed revision stays, and what the guest had lost of it was put back.
	Restored Outcome = "restored"
)

// Installer installs and upgrades releases with the Helm SDK. Charts are fetched with bounded
// requests (see Limits), one fetch per chart however many clusters ask for it at once, and kept
// in memory; no lock is held while a chart source is read.
type Installer struct {
	fetcher *fetcher
	// bundle holds the pinned charts the image ships, installed without a fetch.
	bundle chartarchive.Bundle
	// charts are the chart archives as fetched: the install policy loads one, once per digest,
	// only when its digest is allowed.
	charts *cache[[]byte]
}

// NewInstaller keeps its short-lived files under dir (the container's root file system is
// read-only) and fetches charts through network (its CAs and proxy) within limits.
func NewInstaller(dir string, limits Limits, network outbound.Network) (*Installer, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the Helm cache under %s: %w", dir, err)
	}
	// An empty registry credentials store: credentials come only from the release, never from
	// a file that someone else may write.
	credentials := filepath.Join(dir, "registry-config.json")
	if err := os.WriteFile(credentials, []byte("{}"), 0o600); err != nil {
		return nil, fmt.Errorf("creating the Helm cache under %s: %w", dir, err)
	}
	return &Installer{
		fetcher: &fetcher{limits: limits, indexes: newCache[map[string][]indexEntry](limits.FailureTTL), parsing: make(chan struct{}, 1),
			credentialsFile: credentials, outbound: network.Transport(limits.ConnectTimeout, limits.FetchTimeout)},
		charts: newCache[[]byte](limits.FailureTTL),
	}, nil
}

// UseBundle installs the pinned charts of b, where kube-fip-config asks for them from upstream,
// without fetching anything. Call it before the first install.
func (in *Installer) UseBundle(b chartarchive.Bundle) { in.bundle = b }

// chartTTL is how long a chart without a pinned version is reused before its repository is asked
// again for the newest.
const chartTTL = 10 * time.Minute

// InstallTimeout bounds one install or upgrade; a release pending for longer is taken as stuck.
const InstallTimeout = 2 * time.Minute

// ErrReleaseBusy means the release is pending and its last change is recent: someone may be installing
// or upgrading it right now.
var ErrReleaseBusy = errors.New("the release is being changed right now")

// ErrChartPending means the chart is still being fetched; the install is tried again later, and the
// worker is free meanwhile.
var ErrChartPending = errors.New("the chart is still being fetched")

// chart returns the release's chart as the install policy let it through: the bundled pinned
// chart when kube-fip-config asks for it from upstream, with nothing fetched; else the archive from
// memory when fetched recently (a pinned version is kept for good), or from one fetch shared by
// every caller, loaded only when the policy allows its digest. A caller waits for the fetch at most
// Limits.Wait or until ctx ends; the fetch itself goes on within its own timeout, so a stalled
// source holds up only the installs that need it, and those only briefly. A failed fetch is
// remembered for Limits.FailureTTL.
func (in *Installer) chart(ctx context.Context, rel Release) (*chartarchive.Package, error) {
	if pkg := in.bundle.For(rel.Plan.Chart, rel.RepoURL, rel.Ref, rel.Version); pkg != nil {
		return pkg, nil
	}
	ttl := chartTTL
	if rel.Version != "" {
		ttl = 0
	}
	// Fetched detached from the caller: other clusters may be waiting for the same fetch.
	e, _ := in.charts.get(rel.location()+"@"+rel.Version, ttl, false, func() ([]byte, error) {
		return in.fetcher.fetch(context.WithoutCancel(ctx), rel)
	})
	wait := time.NewTimer(in.fetcher.limits.Wait)
	defer wait.Stop()
	select {
	case <-e.done:
	case <-wait.C:
		return nil, fmt.Errorf("%w from %s %s", ErrChartPending, rel.source(), versionText(rel.Version))
	case <-ctx.Done():
		return nil, fmt.Errorf("%w from %s %s: %v", ErrChartPending, rel.source(), versionText(rel.Version), ctx.Err())
	}
	if e.err != nil {
		return nil, e.err
	}
	pkg, err := rel.Plan.Package(e.value)
	if err != nil {
		return nil, fmt.Errorf("chart %s %s: %w", rel.source(), versionText(rel.Version), err)
	}
	return pkg, nil
}
