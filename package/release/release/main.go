// Command release is the part of scripts/release (make release) that checks before anything is
// built and pushes once everything is: `release check` collects the pinned guest chart archives,
// each held to its pinned digest, and resolves every pinned image in its registry, held to its
// pinned digest; `release push` writes the built image to a registry.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/kubefip/kube-fip-operator/package/release"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx := context.Background()
	switch os.Args[1] {
	case "check":
		fs := flag.NewFlagSet("check", flag.ExitOnError)
		pinsFile := fs.String("pins", "", "a pins file instead of the product's pins (only for a build that is not a release)")
		chartsDir := fs.String("charts-from-dir", "", "take the pinned chart archives from this directory instead of fetching them")
		baseURL := fs.String("chart-base-url", "", "fetch each chart archive as <url>/<file> instead of from its pinned URL")
		registry := fs.String("image-registry", "", "resolve the pinned images in this registry (host[:port][/path]) under their repository paths")
		dest := fs.String("charts-out", "", "directory to write the checked chart archives into")
		timeout := fs.Duration("timeout", time.Minute, "bound on each fetch and registry lookup")
		_ = fs.Parse(os.Args[2:])
		if *dest == "" {
			fail(fmt.Errorf("--charts-out is required"))
		}
		pins := release.ProductPins()
		if *pinsFile != "" {
			p, err := release.ReadPins(*pinsFile)
			if err != nil {
				fail(err)
			}
			pins = p
		}
		src := release.ChartSource{Dir: *chartsDir, BaseURL: *baseURL, Timeout: *timeout}
		if err := release.CollectCharts(ctx, pins.Charts, src, *dest); err != nil {
			fail(err)
		}
		for _, pc := range pins.Charts {
			fmt.Printf("release: chart %s %s: %s\n", pc.File(), pc.Digest, "the pinned digest")
		}
		if err := release.CheckImages(ctx, pins.Images, *registry, *timeout); err != nil {
			fail(err)
		}
		for _, img := range pins.Images {
			fmt.Printf("release: image %s: the registry answers the pinned digest\n", img)
		}
	case "push":
		fs := flag.NewFlagSet("push", flag.ExitOnError)
		dir := fs.String("layout", "dist/image", "the OCI image layout scripts/package wrote")
		dest := fs.String("to", "", "<registry>/<repository>:<tag> to push to")
		_ = fs.Parse(os.Args[2:])
		digest, err := release.Push(ctx, *dir, *dest)
		if err != nil {
			fail(err)
		}
		fmt.Printf("release: pushed %s@%s\n", *dest, digest)
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: release check --charts-out DIR [--pins FILE] [--charts-from-dir DIR | --chart-base-url URL] [--image-registry HOST]")
	fmt.Fprintln(os.Stderr, "       release push --layout DIR --to REGISTRY/REPOSITORY:TAG")
	os.Exit(2)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "release:", err)
	os.Exit(1)
}
