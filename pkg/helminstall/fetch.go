package helminstall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartsource"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/outbound"
	"github.com/kubefip/kube-fip-operator/pkg/redact"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
)

// Limits bound every chart fetch: how long it may take and how much it may read. A chart source
// that stalls or sends without end costs one fetch its timeout, never a worker or memory.
type Limits struct {
	// ConnectTimeout bounds opening a connection (TCP and TLS) to a repository or registry.
	ConnectTimeout time.Duration
	// FetchTimeout bounds one whole fetch: index, archive, or every request of an OCI pull.
	FetchTimeout time.Duration
	// MaxIndexBytes bounds a repository's index.yaml: what it costs to parse grows with it
	// (index.go).
	MaxIndexBytes int64
	// MaxArchiveBytes bounds a chart archive and every OCI manifest, config or layer.
	MaxArchiveBytes int64
	// Wait is how long an install waits for a fetch it started before it is told to come back:
	// the fetch goes on in the background and the worker is free for other clusters.
	Wait time.Duration
	// FailureTTL is how long a failed fetch is remembered before the source is asked again.
	FailureTTL time.Duration
}

// DefaultLimits suit the kube-vip charts (archives of 4 KiB, an index of 18 KiB listing 38
// versions) with a wide margin.
func DefaultLimits() Limits {
	return Limits{
		ConnectTimeout:  10 * time.Second,
		FetchTimeout:    60 * time.Second,
		MaxIndexBytes:   256 << 10,
		MaxArchiveBytes: chartarchive.MaxArchiveBytes,
		Wait:            5 * time.Second,
		FailureTTL:      30 * time.Second,
	}
}

// ErrTooLarge means a repository or registry sent more than the limit allows.
var ErrTooLarge = errors.New("the chart source sent more than the size limit allows")

// fetcher reads charts from HTTP repositories and OCI registries with bounded requests.
type fetcher struct {
	limits Limits
	// indexes are the entries of the repository indexes read of late, shared by the fetches of
	// every chart; parsing is the one parse slot, so that one index is held parsed at a time.
	indexes *cache[map[string][]indexEntry]
	parsing chan struct{}
	// credentialsFile is the registry credentials store, kept empty: credentials come only from
	// the Release.
	credentialsFile string
	// outbound is the deployment's network: its CAs and proxy.
	outbound http.RoundTripper
	// base, when set, replaces the network below the limits and the redirect checks: tests
	// serve named hosts and default ports from memory through it.
	base http.RoundTripper
}

// transport is an HTTP transport with connection timeouts that binds every request to ctx and
// cuts every response body at max bytes.
type transport struct {
	ctx  context.Context
	max  int64
	base http.RoundTripper
	// scope is where the fetch may go: every request is checked, not only redirects, so that a
	// registry's token service (the realm it names) lies within it too.
	scope scope
}

func (f *fetcher) client(ctx context.Context, max int64, sc scope) *http.Client {
	return &http.Client{Transport: &transport{ctx: ctx, max: max, base: f.network(), scope: sc}, Timeout: f.limits.FetchTimeout,
		CheckRedirect: sc.checkRedirect}
}

// network is what the limits wrap: the deployment's network (outbound.Network, with the
// connection timeouts of the limits), or base in tests.
func (f *fetcher) network() http.RoundTripper {
	if f.base != nil {
		return f.base
	}
	return f.outbound
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.scope.allows(req.URL) {
		return nil, t.scope.refusal("a request to", req.URL)
	}
	resp, err := t.base.RoundTrip(req.WithContext(t.ctx))
	if err != nil {
		return nil, err
	}
	if err := guest.CapBody(resp, t.max, ErrTooLarge, nil); err != nil {
		return nil, err
	}
	return resp, nil
}

// fetch reads the archive of the chart rel names, within the limits and ctx. Nothing of it is
// unpacked here: whether it may be is the install policy's to say, by its digest.
func (f *fetcher) fetch(ctx context.Context, rel Release) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, f.limits.FetchTimeout)
	defer cancel()
	if rel.Ref != "" {
		return f.pull(ctx, rel)
	}
	return f.download(ctx, rel)
}

// download reads the repository's index (shared with the other fetches of the moment), picks the
// version and downloads the archive, checking its digest when the index gives one: an archive
// whose listed digest the policy does not allow is not downloaded at all. The archive must lie
// within the release's scope, and credentials go only to the repository's own scheme, host and
// port.
func (f *fetcher) download(ctx context.Context, rel Release) ([]byte, error) {
	raw := strings.TrimSuffix(rel.RepoURL, "/")
	base := redact.URL(raw)
	sc := rel.scope()
	entries, shared, err := f.entries(ctx, rel, false)
	if err != nil {
		return nil, err
	}
	cv, ok := pickVersion(entries, indexEntry.version, rel.Version)
	if !ok && shared {
		// A read of a moment ago may predate the version asked for: read the index again.
		if entries, _, err = f.entries(ctx, rel, true); err != nil {
			return nil, err
		}
		cv, ok = pickVersion(entries, indexEntry.version, rel.Version)
	}
	if !ok {
		return nil, fmt.Errorf("repository %s has no chart %s %s", base, rel.Chart, versionText(rel.Version))
	}
	// The version as the index writes it, which the source chooses, shortened for messages.
	shown := redact.Shorten(cv.Version, maxChartName)
	listed := strings.ToLower(strings.TrimPrefix(cv.Digest, "sha256:"))
	if listed != "" && rel.Plan != nil {
		if err := rel.Plan.CheckDigest("sha256:" + listed); err != nil {
			return nil, fmt.Errorf("repository %s lists chart %s %s: %w", base, rel.Chart, shown, err)
		}
	}
	archiveURL, err := repo.ResolveReferenceURL(raw+"/", cv.URL)
	parsed, perr := url.Parse(archiveURL)
	if err != nil || perr != nil {
		return nil, fmt.Errorf("repository %s lists chart %s %s with a bad URL", base, rel.Chart, shown)
	}
	if !sc.allows(parsed) {
		return nil, fmt.Errorf("repository %s lists chart %s %s: %w", base, rel.Chart, shown, sc.refusal("the archive", parsed))
	}
	creds := rel.Credentials
	if own, err := url.Parse(raw); err != nil || !chartsource.SameOrigin(own, parsed) {
		creds = nil
	}
	data, err := f.get(ctx, archiveURL, creds, f.limits.MaxArchiveBytes, sc)
	if err != nil {
		return nil, fmt.Errorf("downloading chart %s %s: %w", rel.source(), shown, err)
	}
	if listed != "" && guestchart.Digest(data) != "sha256:"+listed {
		return nil, fmt.Errorf("chart %s %s does not match the digest its repository lists", rel.source(), shown)
	}
	return data, nil
}

func versionText(v string) string {
	if v == "" {
		return "(newest)"
	}
	return v
}

// get reads url within max bytes, following redirects within sc.
func (f *fetcher) get(ctx context.Context, u string, creds *Credentials, max int64, sc scope) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, errors.New("bad URL")
	}
	req.Header.Set("User-Agent", "kube-fip-operator")
	if creds != nil {
		req.SetBasicAuth(creds.Username, creds.Password)
	}
	resp, err := f.client(ctx, max, sc).Do(req)
	if err != nil {
		return nil, requestError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the server answered %s", resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, requestError(err)
	}
	return data, nil
}

// requestError drops the URL net/http puts in its errors (the caller names the source itself)
// and keeps the cause, with what to set when it is a certificate or the proxy.
func requestError(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	if errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err) {
		return fmt.Errorf("timed out: %w", err)
	}
	return outbound.Explain(err)
}

// pull reads a chart from an OCI registry: the newest tag matching the version when it is not
// exact, then the chart layer. Every request is bound to ctx and every blob to the size limit.
func (f *fetcher) pull(ctx context.Context, rel Release) ([]byte, error) {
	ref := strings.TrimPrefix(rel.Ref, "oci://")
	options := []registry.ClientOption{
		registry.ClientOptHTTPClient(f.client(ctx, f.limits.MaxArchiveBytes, rel.scope())),
		registry.ClientOptCredentialsFile(f.credentialsFile),
	}
	if u, err := url.Parse(rel.Ref); err == nil && chartsource.Loopback(u.Hostname()) {
		options = append(options, registry.ClientOptPlainHTTP())
	}
	if rel.Credentials != nil {
		options = append(options, registry.ClientOptBasicAuth(rel.Credentials.Username, rel.Credentials.Password))
	}
	rc, err := registry.NewClient(options...)
	if err != nil {
		return nil, fmt.Errorf("creating the OCI registry client: %w", err)
	}
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	// The registry client takes no context; its requests carry ctx through the transport, so
	// they end with it, and this goroutine with them.
	go func() {
		data, err := pullChart(rc, ref, rel.Version)
		done <- result{data, err}
	}()
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("pulling chart %s %s: timed out: %w", rel.source(), versionText(rel.Version), ctx.Err())
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("pulling chart %s %s: %w", rel.source(), versionText(rel.Version), requestError(r.err))
		}
		return r.data, nil
	}
}

func pullChart(rc *registry.Client, ref, version string) (data []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the registry's answer is malformed: %v", r)
		}
	}()
	tag := version
	if !exactVersion(version) {
		tags, err := rc.Tags(ref)
		if err != nil {
			return nil, err
		}
		var ok bool
		if tag, ok = pickVersion(tags, func(t string) string { return t }, version); !ok {
			return nil, errors.New("the registry has no tag of that version")
		}
	}
	res, err := rc.Pull(ref+":"+strings.ReplaceAll(tag, "+", "_"), registry.PullOptWithChart(true))
	if err != nil {
		return nil, err
	}
	return res.Chart.Data, nil
}

// exactVersion reports whether version names one version rather than a range or the newest.
func exactVersion(version string) bool {
	if version == "" {
		return false
	}
	_, err := semver.NewVersion(version)
	return err == nil
}
