package chartrepo

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// The stand-in charts: see charts/README.md for the upstream version each one mirrors. Each keeps
// its chart file as Chart.standin.yaml, so that no directory of the repository but the product's
// two charts is a chart to Rancher's Git repository indexing (it takes every directory holding a
// Chart.yaml); it is loaded as Chart.yaml.
//
//go:embed all:charts
var standInCharts embed.FS

// standInChartFile is the stand-ins' name for Chart.yaml.
const standInChartFile = "Chart.standin.yaml"

// loadStandIn loads the stand-in chart in charts/<dir>.
func loadStandIn(dir string) (*chart.Chart, error) {
	root := path.Join("charts", dir)
	var files []*loader.BufferedFile
	err := fs.WalkDir(standInCharts, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := standInCharts.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, root+"/")
		if name == standInChartFile {
			name = "Chart.yaml"
		}
		files = append(files, &loader.BufferedFile{Name: name, Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading stand-in chart %s: %w", dir, err)
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("loading stand-in chart %s: %w", dir, err)
	}
	return c, nil
}

func mustStandIn(dir, version string) *chart.Chart {
	c, err := loadStandIn(dir)
	if err != nil {
		// The charts are compiled into the binary: a failure is a broken build, not bad input.
		panic(err)
	}
	if version != "" {
		c.Metadata.Version = version
	}
	return c
}

// KubevipChart is the kube-vip stand-in (kube-vip/helm-charts kube-vip 0.9.9, whose object names
// and values keys are those of every release since 0.4.1) published as version.
func KubevipChart(version string) *chart.Chart {
	return mustStandIn("kube-vip", version)
}

// KubevipCloudProviderChart is the kube-vip-cloud-provider stand-in of the generation that
// upstream published version belongs to: before 0.2.3 the Deployment sets no environment (the
// provider reads kube-system/kubevip); 0.2.3 points it at <release namespace>/<name>-cm; from 0.2.4
// on it reads <namespace>/<configMapName>, by default the chart's name.
func KubevipCloudProviderChart(version string) *chart.Chart {
	v := semver.MustParse(version)
	switch {
	case v.LessThan(semver.MustParse("0.2.3")):
		return mustStandIn("kube-vip-cloud-provider-0.2.2", version)
	case v.Equal(semver.MustParse("0.2.3")):
		return mustStandIn("kube-vip-cloud-provider-0.2.3", version)
	default:
		return mustStandIn("kube-vip-cloud-provider-0.2.10", version)
	}
}

// DefaultChart is the stand-in of guest chart c at the version the operator installs by default:
// it mirrors kube-vip/helm-charts' kube-vip 0.9.9 or kube-vip-cloud-provider 0.2.10 (the tags
// kube-vip-0.9.9 and kube-vip-cloud-provider-0.2.10), as charts/README.md records.
func DefaultChart(c guestchart.Chart) *chart.Chart {
	if c == guestchart.Kubevip {
		return KubevipChart(config.DefaultKubevipChartVersion)
	}
	return KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion)
}

// HarvesterCloudProviderChart is the stand-in of the Harvester cloud provider chart that Rancher
// installs into every Harvester guest cluster as release harvester-cloud-provider in kube-system,
// with its kube-vip subchart (kube-vip 0.9.8, whose objects are all named kube-vip).
func HarvesterCloudProviderChart() *chart.Chart {
	c := mustStandIn("harvester-cloud-provider", "")
	c.AddDependency(KubevipChart("0.9.8"))
	return c
}
