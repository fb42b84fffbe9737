package charts

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/postrender"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// CRDAPIVersion is the API the operator chart's install check looks for. An offline render passes
// it as `helm template --api-versions` does, standing in for an installed CRD chart.
const CRDAPIVersion = "kubefip.k8s.binbash.org/v1/FloatingIP"

// RancherAPIVersions are Rancher's APIs the operator chart's install check looks for: it installs
// into Rancher's local cluster only.
func RancherAPIVersions() []string {
	return []string{"provisioning.cattle.io/v1/Cluster", "management.cattle.io/v3/Cluster"}
}

// InstallAPIVersions are the APIs an offline render passes for the install checks to pass: the
// CRD chart's and Rancher's.
func InstallAPIVersions() []string {
	return append([]string{CRDAPIVersion}, RancherAPIVersions()...)
}

// RenderOptions describe one offline render.
type RenderOptions struct {
	// ReleaseName defaults to the chart's name, Namespace to "kube-fip".
	ReleaseName string
	Namespace   string
	// Values override the chart's values.yaml.
	Values map[string]interface{}
	// APIVersions are added to the default capabilities (`helm template --api-versions`).
	APIVersions []string
	// KubeVersion is the Kubernetes version to render for, e.g. "v1.30.14"; empty for Helm's
	// default.
	KubeVersion string
	// PostRenderer, when set, sees the rendered objects as it does in an install.
	PostRenderer postrender.PostRenderer
}

// Render renders a chart the way `helm template` does — the SDK's install in dry-run, client-only
// mode, with no cluster — and returns its objects in manifest order.
func Render(c *chart.Chart, opts RenderOptions) ([]*unstructured.Unstructured, error) {
	install := action.NewInstall(&action.Configuration{Log: func(string, ...interface{}) {}})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = opts.ReleaseName
	if install.ReleaseName == "" {
		install.ReleaseName = c.Name()
	}
	install.Namespace = opts.Namespace
	if install.Namespace == "" {
		install.Namespace = "kube-fip"
	}
	install.APIVersions = opts.APIVersions
	install.PostRenderer = opts.PostRenderer
	if opts.KubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(opts.KubeVersion)
		if err != nil {
			return nil, err
		}
		install.KubeVersion = kv
	}
	rel, err := install.Run(c, opts.Values)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", c.Name(), err)
	}
	return decodeManifest(rel.Manifest)
}

// decodeManifest splits a release manifest into objects, skipping empty documents.
func decodeManifest(manifest string) ([]*unstructured.Unstructured, error) {
	docs := releaseutil.SplitManifests(manifest)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	// SplitManifests names the documents manifest-0, manifest-1, ...: keep their order.
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var objs []*unstructured.Unstructured
	for _, k := range keys {
		var m map[string]interface{}
		if err := yaml.Unmarshal([]byte(docs[k]), &m); err != nil {
			return nil, fmt.Errorf("decoding rendered %s: %w", sourceOf(docs[k]), err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs, nil
}

// sourceOf returns the "# Source: <template>" line Helm puts above each document.
func sourceOf(doc string) string {
	for _, line := range strings.Split(doc, "\n") {
		if s, ok := strings.CutPrefix(line, "# Source: "); ok {
			return s
		}
	}
	return "document"
}

// Lint runs Helm's linter on a chart directory with values overriding values.yaml, as `helm lint
// --strict` would judge it: every warning and error is returned, informational messages (such as a
// missing icon) are not.
func Lint(dir string, values map[string]interface{}, namespace, kubeVersion string) error {
	var kv *chartutil.KubeVersion
	if kubeVersion != "" {
		v, err := chartutil.ParseKubeVersion(kubeVersion)
		if err != nil {
			return err
		}
		kv = v
	}
	linter := lint.AllWithKubeVersion(dir, values, namespace, kv)
	var errs []error
	for _, msg := range linter.Messages {
		if msg.Severity >= support.WarningSev {
			errs = append(errs, msg)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("helm lint %s: %w", dir, errors.Join(errs...))
	}
	return nil
}
