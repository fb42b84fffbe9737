// Command package writes both charts, versioned, into a chart repository directory with its
// index.yaml and the operator chart's icon: scripts/package-helm runs it. The work, with its checks,
// is charts.PackageRepository.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kubefip/kube-fip-operator/package/charts"
)

func main() {
	var opts charts.RepositoryOptions
	flag.StringVar(&opts.Version, "version", "", "chart version (SemVer)")
	flag.StringVar(&opts.AppVersion, "app-version", "", "application version, the image tag")
	flag.StringVar(&opts.ChartsDir, "charts", "charts", "directory holding the chart directories")
	flag.StringVar(&opts.Dest, "dest", "dist/artifacts", "chart repository directory to write")
	flag.StringVar(&opts.URL, "url", "", "URL the directory is served at (as helm repo index --url); empty: relative URLs")
	flag.Parse()
	if opts.Version == "" || opts.AppVersion == "" {
		fmt.Fprintln(os.Stderr, "package: --version and --app-version are required")
		os.Exit(2)
	}
	r, err := charts.PackageRepository(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "package:", err)
		os.Exit(1)
	}
	fmt.Println(r.Archives[charts.CRDChart])
	fmt.Println(r.Archives[charts.OperatorChart])
	fmt.Println(r.Icon)
	fmt.Println(r.Index)
}
