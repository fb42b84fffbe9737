package node

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kubefip/kube-fip-operator/test/rig"
)

// Image is one image a cluster runs, built here: a static program in one layer, named as the
// workloads name it.
type Image struct {
	// Ref is the name and tag, as a pod spec names it (Docker Hub names in full).
	Ref string
	// Binary is the program, placed at Path and run as the image's entrypoint.
	Binary, Path string
	// User, when set, is the image's user (uid:gid).
	User string
}

// Build makes img: one layer holding the program (and /tmp), in the Docker schema 2 format the
// images of Docker Hub and ghcr.io have, for this machine's platform.
func (img Image) Build() (v1.Image, error) {
	data, err := os.ReadFile(img.Binary)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777, ModTime: time.Unix(0, 0)},
		{Name: filepath.Clean(img.Path)[1:], Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data)), ModTime: time.Unix(0, 0)},
	} {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerData := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerData)), nil },
		tarball.WithMediaType(types.DockerLayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.DockerManifestSchema2)
	image, err := mutate.AppendLayers(base, l)
	if err != nil {
		return nil, err
	}
	cfg, err := image.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config.Entrypoint = []string{img.Path}
	cfg.Config.User = img.User
	return mutate.ConfigFile(image, cfg)
}

// LayoutImage is the image of this machine's platform in the OCI image layout at dir (what
// `make package` writes to dist/image).
func LayoutImage(dir string) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the image layout %s: %w", dir, err)
	}
	index, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	outer, err := index.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range outer.Manifests {
		inner, err := index.ImageIndex(d.Digest)
		if err != nil {
			continue
		}
		m, err := inner.IndexManifest()
		if err != nil {
			return nil, err
		}
		for _, im := range m.Manifests {
			if im.Platform != nil && im.Platform.OS == "linux" && im.Platform.Architecture == runtime.GOARCH {
				return inner.Image(im.Digest)
			}
		}
	}
	return nil, fmt.Errorf("the image layout %s has no linux/%s image", dir, runtime.GOARCH)
}

// BuildPause builds the sandbox program into dir and returns the image of it, named PauseImage.
func BuildPause(dir string) (Image, error) {
	bin, err := buildProgram(dir, "pause")
	if err != nil {
		return Image{}, err
	}
	return Image{Ref: PauseImage, Binary: bin, Path: "/pause", User: "65535:65535"}, nil
}

// EchoImage is the image of the echo backend (./echo), which answers with its pod's name.
const EchoImage = "docker.io/kubefip/e2e-echo:test"

// BuildEcho builds the echo backend into dir and returns its image, named EchoImage.
func BuildEcho(dir string) (Image, error) {
	bin, err := buildProgram(dir, "echo")
	if err != nil {
		return Image{}, err
	}
	return Image{Ref: EchoImage, Binary: bin, Path: "/echo", User: "65532:65532"}, nil
}

// TraefikEnv names the directory scripts/build-traefik built Traefik into; make test sets it.
const TraefikEnv = "KUBE_FIP_TRAEFIK"

// TraefikRepository is the image RKE2's rke2-traefik chart runs (rancher/rke2-charts,
// packages/rke2-traefik, values image.repository), under which the suite's build of Traefik is
// tagged with its version.
const TraefikRepository = "docker.io/rancher/hardened-traefik"

// BuildTraefik returns the image of the real Traefik scripts/build-traefik built (TraefikEnv when
// set, otherwise building it on first use), tagged with the version it records. Its entrypoint
// is Traefik, as the upstream image's is, and it runs as the user the upstream chart's security
// context names.
func BuildTraefik() (Image, error) {
	dir, err := rig.BuiltDir(TraefikEnv, "build-traefik")
	if err != nil {
		return Image{}, err
	}
	versions, err := os.ReadFile(filepath.Join(dir, "VERSIONS"))
	if err != nil {
		return Image{}, fmt.Errorf("%s holds no Traefik built by scripts/build-traefik: %w", dir, err)
	}
	fields := strings.Fields(string(versions))
	if len(fields) != 3 {
		return Image{}, fmt.Errorf("%s/VERSIONS is not \"traefik <module> <version>\": %q", dir, versions)
	}
	return Image{Ref: TraefikRepository + ":" + fields[2], Binary: filepath.Join(dir, "traefik"), Path: "/usr/local/bin/traefik", User: "65532:65532"}, nil
}

// buildProgram builds the program in this package's directory name, static, into dir.
func buildProgram(dir, name string) (string, error) {
	bin := filepath.Join(dir, name)
	src, err := packageDir()
	if err != nil {
		return "", err
	}
	if err := rig.GoBuild(src, "./"+name, bin, "-s -w"); err != nil {
		return "", err
	}
	return bin, nil
}

// packageDir is this package's source directory.
func packageDir() (string, error) {
	root, err := rig.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "test", "rig", "node"), nil
}
