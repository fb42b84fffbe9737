package node

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
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

// WriteArchive writes img as a docker-archive tarball in dir, which `ctr images import` takes,
// and returns its path.
func (img Image) WriteArchive(dir string) (string, error) {
	data, err := os.ReadFile(img.Binary)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777, ModTime: time.Unix(0, 0)},
		{Name: filepath.Clean(img.Path)[1:], Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data)), ModTime: time.Unix(0, 0)},
	} {
		if err := tw.WriteHeader(h); err != nil {
			return "", err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(data); err != nil {
				return "", err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	layerData := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerData)), nil },
		tarball.WithMediaType(types.DockerLayer))
	if err != nil {
		return "", err
	}
	base := mutate.MediaType(empty.Image, types.DockerManifestSchema2)
	image, err := mutate.AppendLayers(base, l)
	if err != nil {
		return "", err
	}
	cfg, err := image.ConfigFile()
	if err != nil {
		return "", err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config.Entrypoint = []string{img.Path}
	cfg.Config.User = img.User
	if image, err = mutate.ConfigFile(image, cfg); err != nil {
		return "", err
	}
	return writeArchive(dir, img.Ref, image)
}

// writeArchive writes image, tagged ref, as a docker-archive tarball in dir.
func writeArchive(dir, ref string, image v1.Image) (string, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, safeName(tag.String())+".tar")
	if err := tarball.WriteToFile(path, tag, image); err != nil {
		return "", fmt.Errorf("writing image %s: %w", ref, err)
	}
	return path, nil
}

// safeName makes a file name of an image reference.
func safeName(ref string) string {
	out := []byte(ref)
	for i, c := range out {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			out[i] = '_'
		}
	}
	return string(out)
}

// LayoutImage writes the image of this machine's platform from the OCI image layout at dir (what
// `make package` writes to dist/image), tagged ref as the chart renders it, as a docker-archive
// tarball in out.
func LayoutImage(dir, ref, out string) (string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return "", fmt.Errorf("reading the image layout %s: %w", dir, err)
	}
	index, err := p.ImageIndex()
	if err != nil {
		return "", err
	}
	outer, err := index.IndexManifest()
	if err != nil {
		return "", err
	}
	for _, d := range outer.Manifests {
		inner, err := index.ImageIndex(d.Digest)
		if err != nil {
			continue
		}
		m, err := inner.IndexManifest()
		if err != nil {
			return "", err
		}
		for _, im := range m.Manifests {
			if im.Platform != nil && im.Platform.OS == "linux" && im.Platform.Architecture == runtime.GOARCH {
				img, err := inner.Image(im.Digest)
				if err != nil {
					return "", err
				}
				return writeArchive(out, ref, img)
			}
		}
	}
	return "", fmt.Errorf("the image layout %s has no linux/%s image", dir, runtime.GOARCH)
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

// buildProgram builds the program in this package's directory name, static, into dir.
func buildProgram(dir, name string) (string, error) {
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./"+name)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	src, err := packageDir()
	if err != nil {
		return "", err
	}
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %w: %s", name, err, out)
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
