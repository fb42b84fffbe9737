package helminstall

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/release"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
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
	// Trusted are the digests (ManifestDigest) of the manifests the operator applied to this
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
)

// Installer installs and upgrades releases with the Helm SDK. Charts are fetched with bounded
// requests (see Limits), one fetch per chart however many clusters ask for it at once, and kept
// in memory; no lock is held while a chart source is read.
type Installer struct {
	// chartTTL is how long a chart without a pinned version is reused before its repository is
	// asked again for the newest.
	chartTTL time.Duration
	fetcher  *fetcher
	// bundle holds the pinned charts the image ships, installed without a fetch.
	bundle installpolicy.Bundle

	mu     sync.Mutex
	charts map[string]*chartEntry
}

// chartEntry is one chart as fetched, or being fetched: done closes when the fetch ends.
type chartEntry struct {
	done chan struct{}
	// data is the chart archive as fetched: the install policy loads it, once per digest, only
	// when its digest is allowed.
	data    []byte
	err     error
	fetched time.Time
}

// NewInstaller keeps its short-lived files under dir (the container's root file system is
// read-only) and fetches charts within limits.
func NewInstaller(dir string, limits Limits) (*Installer, error) {
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
		chartTTL: 10 * time.Minute,
		fetcher:  &fetcher{limits: limits, indexes: newIndexes(), credentialsFile: credentials},
		charts:   map[string]*chartEntry{},
	}, nil
}

// UseBundle installs the pinned charts of b, where kube-fip-config asks for them from upstream,
// without fetching anything. Call it before the first install.
func (in *Installer) UseBundle(b installpolicy.Bundle) { in.bundle = b }

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
func (in *Installer) chart(ctx context.Context, rel Release) (*installpolicy.Package, error) {
	if rel.Plan == nil {
		return nil, errors.New("no install plan: nothing is fetched")
	}
	if pkg := in.bundle.For(rel.Plan.Chart, rel.RepoURL, rel.Ref, rel.Version); pkg != nil {
		return pkg, nil
	}
	key := rel.location() + "@" + rel.Version
	in.mu.Lock()
	e, ok := in.charts[key]
	if ok && e.stale(rel.Version != "", in.chartTTL, in.fetcher.limits.FailureTTL) {
		ok = false
	}
	if !ok {
		e = &chartEntry{done: make(chan struct{})}
		in.charts[key] = e
		go func() {
			// Detached from the caller: other clusters may be waiting for the same fetch.
			data, err := in.fetcher.fetch(context.WithoutCancel(ctx), rel)
			in.mu.Lock()
			e.data, e.err, e.fetched = data, err, time.Now()
			in.mu.Unlock()
			close(e.done)
		}()
	}
	in.mu.Unlock()

	wait := time.NewTimer(in.fetcher.limits.Wait)
	defer wait.Stop()
	select {
	case <-e.done:
	case <-wait.C:
		return nil, fmt.Errorf("%w from %s %s", ErrChartPending, rel.source(), versionText(rel.Version))
	case <-ctx.Done():
		return nil, fmt.Errorf("%w from %s %s: %v", ErrChartPending, rel.source(), versionText(rel.Version), ctx.Err())
	}
	in.mu.Lock()
	data, err := e.data, e.err
	in.mu.Unlock()
	if err != nil {
		return nil, err
	}
	pkg, err := rel.Plan.Package(data)
	if err != nil {
		return nil, fmt.Errorf("chart %s %s: %w", rel.source(), versionText(rel.Version), err)
	}
	return pkg, nil
}

// stale reports whether a finished entry must be fetched again; one in flight never is.
func (e *chartEntry) stale(pinned bool, ttl, failureTTL time.Duration) bool {
	select {
	case <-e.done:
	default:
		return false
	}
	switch {
	case e.err != nil:
		return time.Since(e.fetched) >= failureTTL
	case pinned:
		return false
	default:
		return time.Since(e.fetched) >= ttl
	}
}

// loopbackRegistry reports whether an OCI reference points at a registry on this machine, which is
// reached over plain HTTP, as container runtimes treat 127.0.0.0/8 by default.
func loopbackRegistry(ref string) bool {
	u, err := url.Parse(ref)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// OwnerLabel marks the Helm releases the operator installed (a label of the release record).
const OwnerLabel = "kubefip.k8s.binbash.org/installed-by"

func ownedLabels() map[string]string { return map[string]string{OwnerLabel: "kube-fip-operator"} }

// ForeignRelease is a release of the configured name that holds another chart: the operator
// leaves it alone rather than replace, recover or uninstall someone else's release.
type ForeignRelease struct {
	Namespace, Name, Chart, Want string
}

func (e *ForeignRelease) Error() string {
	return fmt.Sprintf("release %s/%s holds chart %q, not %s: it is not one the operator installs, so it is left alone; "+
		"name another release in kube-fip-config", e.Namespace, e.Name, e.Chart, e.Want)
}

// chartName is the name the chart is published under.
func (r Release) chartName() string {
	if r.Ref != "" {
		return path.Base(strings.TrimSuffix(strings.TrimPrefix(r.Ref, "oci://"), "/"))
	}
	return r.Chart
}

// owns reports whether last is a release of this chart: one the operator installed (its label),
// or an earlier one of the same chart (the original operator's, adopted by the next upgrade,
// which adds the label). Anything else is a *ForeignRelease.
func (r Release) owns(last *release.Release) error {
	name := ""
	if last.Chart != nil && last.Chart.Metadata != nil {
		name = last.Chart.Metadata.Name
	}
	if name != r.chartName() {
		return &ForeignRelease{Namespace: r.Namespace, Name: r.Name, Chart: redact.Shorten(name, maxChartName), Want: r.chartName()}
	}
	return nil
}

// maxChartName bounds how much of a chart name read from a guest's release a message repeats.
const maxChartName = 63
