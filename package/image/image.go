// Package image assembles the operator's multi-architecture container image without a container
// engine or a registry: one image per platform, each a base layer built here plus the binary, in an
// OCI image index written to an OCI image layout directory (scripts/package).
package image

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
)

const (
	// Entrypoint is where the binary lives in the image.
	Entrypoint = "/usr/bin/kube-fip-operator"
	// User is the image's user:group, the same as package/Dockerfile's.
	User = "65532:65532"
	// Source, Title and Licenses are the OCI labels that do not change between builds.
	Source   = "https://github.com/kubefip/kube-fip-operator"
	Title    = "kube-fip-operator"
	Licenses = "Apache-2.0"
	// RefNameAnnotation names the index inside the layout, as `skopeo copy oci:<dir>:<tag>` reads it.
	RefNameAnnotation = "org.opencontainers.image.ref.name"
)

// Options describe one build of the image.
type Options struct {
	// Version and Revision are the operator's version and git commit, as linked into the binaries.
	Version  string
	Revision string
	// Created is the build time recorded in the image: the commit time or SOURCE_DATE_EPOCH, so two
	// builds of one commit give the same digest.
	Created time.Time
	// Tag names the index in the layout; empty leaves it unnamed.
	Tag string
	// BinDir holds one binary per architecture, at BinaryPath(BinDir, arch).
	BinDir string
	// Architectures are the GOARCH values to package, all for linux.
	Architectures []string
	// GuestChartsDir, when set, holds the pinned guest chart archives (chartarchive.PinnedCharts,
	// by their upstream file names) to ship at chartarchive.DefaultGuestChartsDir; each must have
	// its pinned digest. Empty: the image ships none, and the operator fetches them.
	GuestChartsDir string
	// GuestCharts are the archives GuestChartsDir may hold; nil is chartarchive.PinnedCharts.
	GuestCharts []chartarchive.PinnedChart
}

// GuestCharts are the file names of the guest chart archives an image of o ships, or an error
// naming an archive it refuses.
func GuestCharts(o Options) ([]string, error) {
	_, names, err := guestChartsLayer(o.GuestChartsDir, o.guestCharts())
	return names, err
}

func (o Options) guestCharts() []chartarchive.PinnedChart {
	if o.GuestCharts == nil {
		return chartarchive.PinnedCharts()
	}
	return o.GuestCharts
}

// BinaryPath is where scripts/package puts the linux binary for arch.
func BinaryPath(binDir, arch string) string {
	return filepath.Join(binDir, "linux-"+arch, "kube-fip-operator")
}

// Labels are the OCI annotations carried by every image config and by the index.
func Labels(o Options) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    Title,
		"org.opencontainers.image.source":   Source,
		"org.opencontainers.image.licenses": Licenses,
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.revision": o.Revision,
		"org.opencontainers.image.created":  o.Created.UTC().Format(time.RFC3339),
	}
}

// Platform is the OCI platform of a linux image for a Go architecture: arm64 is ARMv8, as
// container runtimes match it.
func Platform(arch string) v1.Platform {
	p := v1.Platform{OS: "linux", Architecture: arch}
	if arch == "arm64" {
		p.Variant = "v8"
	}
	return p
}

// Index assembles the image index, one image per architecture.
func Index(o Options) (v1.ImageIndex, error) {
	if o.Version == "" || o.Revision == "" || o.Created.IsZero() || len(o.Architectures) == 0 {
		return nil, fmt.Errorf("image: version, revision, created time and at least one architecture are required")
	}
	base, err := baseLayer()
	if err != nil {
		return nil, err
	}
	charts, names, err := guestChartsLayer(o.GuestChartsDir, o.guestCharts())
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range o.Architectures {
		img, err := platformImage(o, base, arch, charts, names)
		if err != nil {
			return nil, err
		}
		platform := Platform(arch)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &platform},
		})
	}
	annotated, ok := mutate.Annotations(idx, Labels(o)).(v1.ImageIndex)
	if !ok {
		return nil, fmt.Errorf("image: annotating the index did not return an index")
	}
	return annotated, nil
}

func platformImage(o Options, base v1.Layer, arch string, charts v1.Layer, chartNames []string) (v1.Image, error) {
	path := BinaryPath(o.BinDir, arch)
	bin, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("image: binary for linux/%s: %w", arch, err)
	}
	binLayer, err := layer([]entry{
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/bin/", mode: 0o755, dir: true},
		{name: Entrypoint[1:], mode: 0o755, data: bin},
	})
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: o.Created.UTC()}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "kube-fip-operator base: passwd, group, /tmp, CA roots"}},
		mutate.Addendum{Layer: binLayer, History: v1.History{Created: created, CreatedBy: "kube-fip-operator " + o.Version + " for linux/" + arch}},
	)
	if err != nil {
		return nil, err
	}
	if charts != nil {
		img, err = mutate.Append(img, mutate.Addendum{Layer: charts,
			History: v1.History{Created: created, CreatedBy: "pinned guest charts: " + strings.Join(chartNames, " ")}})
		if err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	platform := Platform(arch)
	cf.OS, cf.Architecture, cf.Variant = platform.OS, platform.Architecture, platform.Variant
	cf.Created = created
	cf.Config.User = User
	cf.Config.Entrypoint = []string{Entrypoint}
	cf.Config.WorkingDir = "/"
	cf.Config.Env = []string{"PATH=/usr/bin:/bin"}
	cf.Config.Labels = Labels(o)
	return mutate.ConfigFile(img, cf)
}
