// Package charts works on the project's Helm charts with the Helm SDK: loading, linting and
// rendering them offline, and packaging them with the build's version (scripts/package-helm). The
// chart tests live here too. No helm CLI needed.
package charts

import (
	"fmt"
	"os"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// Names of the two charts, in install order.
const (
	CRDChart      = "kube-fip-operator-crd"
	OperatorChart = "kube-fip-operator"
)

// MinKubeVersion is the oldest Kubernetes both charts admit (their Chart.yaml kubeVersion): a render
// that stands for any cluster, such as the packaging check, renders for it. Helm's own default for
// an offline render (1.20) is older, and the charts refuse it.
const MinKubeVersion = "v1.28.0"

// Load reads a chart directory or a packaged chart (.tgz).
func Load(path string) (*chart.Chart, error) {
	c, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", path, err)
	}
	return c, nil
}

// Package writes the chart in dir, stamped with version and appVersion, as a .tgz into dest and
// returns the file's path. The main chart's default image tag follows appVersion.
func Package(dir, version, appVersion, dest string) (string, error) {
	c, err := Load(dir)
	if err != nil {
		return "", err
	}
	c.Metadata.Version = version
	c.Metadata.AppVersion = appVersion
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("chart %s with version %q: %w", dir, version, err)
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return "", err
	}
	path, err := chartutil.Save(c, dest)
	if err != nil {
		return "", fmt.Errorf("packaging %s: %w", dir, err)
	}
	return path, nil
}
