package guest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
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
	Values  map[string]interface{}
	// Update lets an installed release be upgraded when the chart version or the values differ.
	Update bool
}

func (r Release) source() string {
	if r.Ref != "" {
		return r.Ref
	}
	return strings.TrimSuffix(r.RepoURL, "/") + "/" + r.Chart
}

// Outcome says what Ensure did.
type Outcome string

const (
	Installed Outcome = "installed"
	Upgraded  Outcome = "upgraded"
	Unchanged Outcome = "unchanged"
	// Recovered: the release was stuck in a pending state and was brought back.
	Recovered Outcome = "recovered"
)

// Installer installs and upgrades releases with the Helm SDK. Its caches live under a writable
// directory from configuration (the container's root file system is read-only).
type Installer struct {
	settings *cli.EnvSettings
	// chartTTL is how long a chart without a pinned version is reused before its repository is
	// asked again for the newest.
	chartTTL time.Duration

	mu     sync.Mutex
	charts map[string]cachedChart
}

type cachedChart struct {
	chart   *chart.Chart
	fetched time.Time
}

// NewInstaller keeps Helm's repository and registry caches under dir.
func NewInstaller(dir string) (*Installer, error) {
	for _, sub := range []string{"repository", "registry"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("creating the Helm cache under %s: %w", dir, err)
		}
	}
	settings := cli.New()
	settings.RepositoryCache = filepath.Join(dir, "repository")
	settings.RepositoryConfig = filepath.Join(dir, "repositories.yaml")
	settings.RegistryConfig = filepath.Join(dir, "registry", "config.json")
	return &Installer{settings: settings, chartTTL: 10 * time.Minute, charts: map[string]cachedChart{}}, nil
}

// InstallTimeout bounds one install or upgrade; a release pending for longer is taken as stuck.
const InstallTimeout = 2 * time.Minute

// ErrReleaseBusy: the release is pending and its last change is recent: someone may be installing
// or upgrading it right now.
var ErrReleaseBusy = errors.New("the release is being changed right now")

// configuration is a Helm action configuration for namespace of the guest, releases stored in
// Secrets as the Helm CLI keeps them.
func (in *Installer) configuration(c *Client, namespace string) (*action.Configuration, error) {
	cfg := new(action.Configuration)
	debug := func(format string, v ...interface{}) {
		logrus.Debugf("helm in %s/%s: %s", c.Name, namespace, fmt.Sprintf(format, v...))
	}
	if err := cfg.Init(NewRESTClientGetter(c.Config, namespace), namespace, "secret", debug); err != nil {
		return nil, fmt.Errorf("preparing Helm for %s: %w", c.Name, err)
	}
	return cfg, nil
}

// Ensure makes rel installed in the guest: installed when missing, recovered when stuck pending
// for longer than InstallTimeout, upgraded when allowed and the chart version or values changed,
// else left alone.
func (in *Installer) Ensure(ctx context.Context, c *Client, rel Release) (Outcome, error) {
	cfg, err := in.configuration(c, rel.Namespace)
	if err != nil {
		return "", err
	}
	last, err := cfg.Releases.Last(rel.Name)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return "", fmt.Errorf("reading release %s/%s: %w", rel.Namespace, rel.Name, err)
	}
	outcome := Installed
	if last != nil && last.Info.Status.IsPending() && time.Since(last.Info.LastDeployed.Time) < InstallTimeout {
		return "", fmt.Errorf("release %s/%s is %s since %s: %w", rel.Namespace, rel.Name, last.Info.Status,
			last.Info.LastDeployed.UTC().Format(time.RFC3339), ErrReleaseBusy)
	}
	if last != nil {
		switch {
		case last.Info.Status == release.StatusPendingInstall || last.Info.Status == release.StatusFailed && last.Version == 1:
			// Nothing was ever deployed: start over.
			if _, err := action.NewUninstall(cfg).Run(rel.Name); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
				return "", fmt.Errorf("removing release %s/%s stuck in %s: %w", rel.Namespace, rel.Name, last.Info.Status, err)
			}
			last, outcome = nil, Recovered
		case last.Info.Status.IsPending():
			// An upgrade or rollback died half-way: mark it failed so that an upgrade may proceed.
			last.SetStatus(release.StatusFailed, "marked failed by kube-fip-operator: the operation never finished")
			if err := cfg.Releases.Update(last); err != nil {
				return "", fmt.Errorf("recovering release %s/%s: %w", rel.Namespace, rel.Name, err)
			}
			outcome = Recovered
		}
	}

	if last != nil && outcome != Recovered && !rel.Update {
		return Unchanged, nil
	}
	ch, err := in.chart(cfg, rel)
	if err != nil {
		return "", err
	}
	if last == nil {
		install := action.NewInstall(cfg)
		install.Namespace, install.ReleaseName = rel.Namespace, rel.Name
		install.CreateNamespace = true
		install.Timeout = InstallTimeout
		if _, err := install.RunWithContext(ctx, ch, rel.Values); err != nil {
			return "", fmt.Errorf("installing %s from %s: %w", rel.Name, rel.source(), err)
		}
		return outcome, nil
	}
	if outcome != Recovered && last.Chart != nil && last.Chart.Metadata.Version == ch.Metadata.Version && sameValues(last.Config, rel.Values) {
		return Unchanged, nil
	}
	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = rel.Namespace
	upgrade.MaxHistory = 5
	upgrade.Timeout = InstallTimeout
	if _, err := upgrade.RunWithContext(ctx, rel.Name, ch, rel.Values); err != nil {
		return "", fmt.Errorf("upgrading %s to %s %s: %w", rel.Name, rel.source(), ch.Metadata.Version, err)
	}
	if outcome == Recovered {
		return Recovered, nil
	}
	return Upgraded, nil
}

// chart fetches the release's chart, reusing one fetched recently. Fetches are serialised: they
// share Helm's cache directory.
func (in *Installer) chart(cfg *action.Configuration, rel Release) (*chart.Chart, error) {
	key := rel.source() + "@" + rel.Version
	in.mu.Lock()
	defer in.mu.Unlock()
	if cached, ok := in.charts[key]; ok && (rel.Version != "" || time.Since(cached.fetched) < in.chartTTL) {
		return cached.chart, nil
	}

	opts := action.ChartPathOptions{Version: rel.Version}
	name := rel.Chart
	if rel.Ref != "" {
		name = rel.Ref
		plain := loopbackRegistry(rel.Ref)
		options := []registry.ClientOption{registry.ClientOptCredentialsFile(in.settings.RegistryConfig)}
		if plain {
			options = append(options, registry.ClientOptPlainHTTP())
		}
		rc, err := registry.NewClient(options...)
		if err != nil {
			return nil, fmt.Errorf("creating the OCI registry client: %w", err)
		}
		cfg.RegistryClient = rc
		opts.PlainHTTP = plain
		install := action.NewInstall(cfg)
		install.ChartPathOptions = opts
		install.SetRegistryClient(rc)
		opts = install.ChartPathOptions
	} else {
		opts.RepoURL = rel.RepoURL
	}
	path, err := opts.LocateChart(name, in.settings)
	if err != nil {
		return nil, fmt.Errorf("fetching chart %s %s: %w", rel.source(), rel.Version, err)
	}
	ch, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", rel.source(), err)
	}
	in.charts[key] = cachedChart{chart: ch, fetched: time.Now()}
	return ch, nil
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

// sameValues compares the values a release was installed with to the wanted ones; nil and empty
// are the same.
func sameValues(a, b map[string]interface{}) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(normalize(a), normalize(b))
}
