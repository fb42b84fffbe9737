// Command package writes both charts, versioned, into a directory: scripts/package-helm runs it.
// Each chart is linted first, and each archive written is loaded back and rendered, so a broken
// chart never reaches dist/.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubefip/kube-fip-operator/pkg/charts"
)

func main() {
	version := flag.String("version", "", "chart version (SemVer)")
	appVersion := flag.String("app-version", "", "application version")
	src := flag.String("charts", "charts", "directory holding the chart directories")
	dest := flag.String("dest", "dist/artifacts", "output directory")
	flag.Parse()
	if *version == "" || *appVersion == "" {
		fmt.Fprintln(os.Stderr, "package: --version and --app-version are required")
		os.Exit(2)
	}
	for _, name := range []string{charts.CRDChart, charts.OperatorChart} {
		path, err := packageChart(filepath.Join(*src, name), *version, *appVersion, *dest)
		if err != nil {
			fmt.Fprintln(os.Stderr, "package:", err)
			os.Exit(1)
		}
		fmt.Println(path)
	}
}

func packageChart(dir, version, appVersion, dest string) (string, error) {
	// Linting renders without a cluster, where the operator chart's CRD check cannot look.
	var values map[string]interface{}
	if filepath.Base(dir) == charts.OperatorChart {
		values = map[string]interface{}{"validateInstallCRD": false}
	}
	if err := charts.Lint(dir, values, "kube-fip", ""); err != nil {
		return "", err
	}
	path, err := charts.Package(dir, version, appVersion, dest)
	if err != nil {
		return "", err
	}
	c, err := charts.Load(path)
	if err != nil {
		return "", err
	}
	if c.Metadata.Version != version || c.Metadata.AppVersion != appVersion {
		return "", fmt.Errorf("%s: version %q, appVersion %q; want %q, %q", path, c.Metadata.Version, c.Metadata.AppVersion, version, appVersion)
	}
	opts := charts.RenderOptions{APIVersions: []string{charts.CRDAPIVersion}}
	if _, err := charts.Render(c, opts); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return path, nil
}
