// Command layout writes the operator's multi-architecture image as an OCI image layout:
// scripts/package runs it after cross-compiling the binaries into bin/linux-<arch>/.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kubefip/kube-fip-operator/package/image"
	"github.com/kubefip/kube-fip-operator/package/release"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
)

func main() {
	o := image.Options{}
	flag.StringVar(&o.Version, "version", "", "operator version, as linked into the binaries")
	flag.StringVar(&o.Revision, "revision", "", "git commit of the build")
	flag.StringVar(&o.Tag, "tag", "", "name of the index inside the layout (the image tag)")
	flag.StringVar(&o.BinDir, "bin-dir", "bin", "directory holding linux-<arch>/kube-fip-operator")
	archs := flag.String("arch", "amd64,arm64", "comma-separated architectures")
	created := flag.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "build time in Unix seconds (default $SOURCE_DATE_EPOCH)")
	dest := flag.String("dest", "dist/image", "OCI layout directory to write; must be missing or empty")
	flag.StringVar(&o.GuestChartsDir, "guest-charts-dir", os.Getenv("GUEST_CHARTS_DIR"),
		"directory of the pinned guest chart archives to ship (default $GUEST_CHARTS_DIR); each must have its pinned digest")
	pinsFile := flag.String("pins", os.Getenv("PINS"), "a pins file (package/release) whose charts the guest charts are held to instead of the product's "+
		"(default $PINS); only for a build that is not a release: the operator refuses such archives at start")
	flag.Parse()

	secs, err := strconv.ParseInt(*created, 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "layout: --created or SOURCE_DATE_EPOCH must be Unix seconds (the commit time keeps builds reproducible)")
		os.Exit(2)
	}
	o.Created = time.Unix(secs, 0).UTC()
	o.Architectures = strings.Split(*archs, ",")
	if *pinsFile != "" {
		pins, err := release.ReadPins(*pinsFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "layout:", err)
			os.Exit(1)
		}
		o.GuestCharts = pins.Charts
	}

	charts, err := image.GuestCharts(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "layout:", err)
		os.Exit(1)
	}
	digest, err := image.WriteLayout(*dest, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "layout:", err)
		os.Exit(1)
	}
	if len(charts) == 0 {
		fmt.Fprintln(os.Stderr, "layout: the image ships no guest charts: the operator fetches the pinned ones and says so (make release builds the image that ships them)")
	} else {
		fmt.Fprintf(os.Stderr, "layout: the image ships the guest charts %s at %s\n", strings.Join(charts, ", "), chartarchive.DefaultGuestChartsDir)
	}
	fmt.Printf("%s %s\n", *dest, digest)
}
