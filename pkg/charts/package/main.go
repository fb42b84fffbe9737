// Command package writes both charts, versioned, into a directory: scripts/package-helm runs it.
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
		path, err := charts.Package(filepath.Join(*src, name), *version, *appVersion, *dest)
		if err != nil {
			fmt.Fprintln(os.Stderr, "package:", err)
			os.Exit(1)
		}
		fmt.Println(path)
	}
}
