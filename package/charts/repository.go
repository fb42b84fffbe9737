package charts

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/provenance"
	"helm.sh/helm/v3/pkg/repo"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// AutoInstallAnnotation names the chart Rancher installs before this one, as name=version or
// name=match (the same version as this chart).
const AutoInstallAnnotation = "catalog.cattle.io/auto-install"

// IndexFile and IconFile are the names, in a chart repository directory, of the index and of the
// operator chart's icon served beside it.
const (
	IndexFile = "index.yaml"
	IconFile  = OperatorChart + ".svg"
)

// RepositoryOptions describe one chart repository written by PackageRepository.
type RepositoryOptions struct {
	// Version is the charts' version (SemVer), AppVersion the application's (the image tag).
	Version    string
	AppVersion string
	// ChartsDir holds the chart directories; Dest is the repository directory written.
	ChartsDir string
	Dest      string
	// URL is where Dest will be served, as `helm repo index --url`: the index then names archives
	// and the icon by absolute URLs under it. Empty: by names relative to the index, which Helm and
	// Rancher resolve against the repository URL they were given.
	URL string
}

// Repository is what PackageRepository wrote.
type Repository struct {
	Index string
	// Archives by chart name.
	Archives map[string]string
	// Icon is the icon file served beside the index.
	Icon string
}

// PackageRepository writes both charts, versioned, into a chart repository directory that Helm and
// Rancher can add over HTTP: the two archives, the operator chart's icon and an index.yaml naming
// them. Each chart is linted first; each archive is loaded back, checked for its versions and
// rendered; the CRD chart's version must be the one the operator chart's auto-install annotation
// asks for.
//
// The icon. Rancher reads a chart's icon from its repository's index (rancher/rancher
// pkg/catalogv2/content Manager.Icon, read at v2.8.0 through v2.15.0-alpha21-143-g59bd052e44): an
// icon that is not an http(s) URL is a file of the Git checkout when the repository is a Git one
// (file:// stripped, joined to the checkout root, refused outside it); anything else is fetched
// over HTTP, a relative URL resolved against the repository URL, with the repository's credentials
// sent only to the repository's own host and port (same-origin check). So Chart.yaml keeps the Git
// form, file://charts/kube-fip-operator/icon.svg, and the archive with it; the HTTP index instead
// names the icon file served beside it, under URL when given, else relative: same origin either way.
func PackageRepository(opts RepositoryOptions) (*Repository, error) {
	if opts.Version == "" || opts.AppVersion == "" {
		return nil, fmt.Errorf("packaging charts: a version and an app version are required")
	}
	if opts.URL != "" {
		u, err := url.Parse(opts.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("repository URL %q: want an http or https URL", opts.URL)
		}
	}
	out := &Repository{Index: filepath.Join(opts.Dest, IndexFile), Archives: map[string]string{}}
	loaded := map[string]*chart.Chart{}
	for _, name := range []string{CRDChart, OperatorChart} {
		archive, c, err := packageChecked(filepath.Join(opts.ChartsDir, name), opts.Version, opts.AppVersion, opts.Dest)
		if err != nil {
			return nil, err
		}
		out.Archives[name], loaded[name] = archive, c
	}
	if err := checkAutoInstall(loaded[OperatorChart], loaded); err != nil {
		return nil, err
	}

	icon, err := GitIconPath(loaded[OperatorChart].Metadata)
	if err != nil {
		return nil, err
	}
	data, err := chartFile(loaded[OperatorChart], icon)
	if err != nil {
		return nil, err
	}
	out.Icon = filepath.Join(opts.Dest, IconFile)
	if err := os.WriteFile(out.Icon, data, 0o644); err != nil {
		return nil, err
	}
	iconURL := IconFile
	if opts.URL != "" {
		iconURL = strings.TrimSuffix(opts.URL, "/") + "/" + IconFile
	}

	index := repo.NewIndexFile()
	for _, name := range []string{CRDChart, OperatorChart} {
		digest, err := provenance.DigestFile(out.Archives[name])
		if err != nil {
			return nil, err
		}
		md := *loaded[name].Metadata
		if name == OperatorChart {
			md.Icon = iconURL
		}
		if err := index.MustAdd(&md, filepath.Base(out.Archives[name]), opts.URL, digest); err != nil {
			return nil, err
		}
	}
	index.SortEntries()
	if err := index.WriteFile(out.Index, 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", out.Index, err)
	}
	return out, nil
}

// packageChecked lints the chart in dir, packages it into dest and loads the archive back: it must
// carry version and appVersion and render, the operator chart with its image tagged appVersion.
func packageChecked(dir, version, appVersion, dest string) (string, *chart.Chart, error) {
	// Linting renders without a cluster, where the operator chart's CRD check cannot look.
	var values map[string]interface{}
	if filepath.Base(dir) == OperatorChart {
		values = map[string]interface{}{"validateInstallCRD": false}
	}
	if err := Lint(dir, values, "kube-fip", ""); err != nil {
		return "", nil, err
	}
	archive, err := Package(dir, version, appVersion, dest)
	if err != nil {
		return "", nil, err
	}
	c, err := Load(archive)
	if err != nil {
		return "", nil, err
	}
	if c.Metadata.Version != version || c.Metadata.AppVersion != appVersion {
		return "", nil, fmt.Errorf("%s: version %q, appVersion %q; want %q, %q", archive, c.Metadata.Version, c.Metadata.AppVersion, version, appVersion)
	}
	objs, err := Render(c, RenderOptions{APIVersions: InstallAPIVersions(), KubeVersion: MinKubeVersion})
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", archive, err)
	}
	if c.Name() != OperatorChart {
		return archive, c, nil
	}
	images := 0
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, ctr := range containers {
			image, _, _ := unstructured.NestedString(asObject(ctr), "image")
			images++
			if !strings.HasSuffix(image, ":"+appVersion) {
				return "", nil, fmt.Errorf("%s: Deployment %s runs image %q; want the tag %q", archive, o.GetName(), image, appVersion)
			}
		}
	}
	if images == 0 {
		return "", nil, fmt.Errorf("%s: no Deployment container rendered to check the image tag", archive)
	}
	return archive, c, nil
}

// checkAutoInstall checks that the chart Rancher installs first (AutoInstallAnnotation) is among
// the packaged charts with the version the annotation asks for.
func checkAutoInstall(c *chart.Chart, packaged map[string]*chart.Chart) error {
	ann := c.Metadata.Annotations[AutoInstallAnnotation]
	if ann == "" {
		return fmt.Errorf("chart %s: no %s annotation naming the CRD chart", c.Name(), AutoInstallAnnotation)
	}
	name, want, ok := strings.Cut(ann, "=")
	if !ok || name == "" || want == "" {
		return fmt.Errorf("chart %s: %s %q; want name=version or name=match", c.Name(), AutoInstallAnnotation, ann)
	}
	dep, found := packaged[name]
	if !found {
		return fmt.Errorf("chart %s auto-installs %s, which is not packaged with it", c.Name(), name)
	}
	if want == "match" {
		want = c.Metadata.Version
	}
	if dep.Metadata.Version != want {
		return fmt.Errorf("chart %s auto-installs %s version %s, but %s is version %s", c.Name(), name, want, name, dep.Metadata.Version)
	}
	return nil
}

// GitIconPath returns the path inside the chart of the icon that md names in its Git form,
// file://charts/<chart>/<path> relative to the repository root.
func GitIconPath(md *chart.Metadata) (string, error) {
	prefix := "file://charts/" + md.Name + "/"
	rel, ok := strings.CutPrefix(md.Icon, prefix)
	if !ok || rel == "" || path.Clean(rel) != rel || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("chart %s: icon %q; want %s<file of the chart>", md.Name, md.Icon, prefix)
	}
	return rel, nil
}

// chartFile returns the content of the file at path inside the chart (not a template).
func chartFile(c *chart.Chart, name string) ([]byte, error) {
	for _, f := range c.Files {
		if f.Name == name {
			return f.Data, nil
		}
	}
	return nil, fmt.Errorf("chart %s has no file %s", c.Name(), name)
}

// asObject returns v as an object, or an empty one when it is none.
func asObject(v interface{}) map[string]interface{} {
	m, _ := v.(map[string]interface{})
	return m
}
