// Package release checks what a release ships before anything is built: the pinned guest chart
// archives, fetched (or taken from a directory) and each held to its pinned digest, and every
// pinned image, its tag resolved in its registry and held to its pinned digest. scripts/release runs
// it (package/release/release), then builds the image with the archives inside, and pushes the
// image only when asked.
package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// Pins are what a release holds to: the guest chart archives it ships and the images the guests
// run, each with its digest.
type Pins struct {
	Charts []chartarchive.PinnedChart `json:"charts"`
	// Images are references <repository>:<tag>@sha256:<hex>, named at the repository whose digest
	// is recorded.
	Images []string `json:"images"`
}

// ProductPins are the pins compiled into the operator: chartarchive.PinnedCharts and pkg/config's
// pinned images. A release ships these and nothing else.
func ProductPins() Pins {
	return Pins{Charts: chartarchive.PinnedCharts(), Images: []string{config.DefaultKubevipImage, config.DefaultKubevipCloudProviderImage}}
}

// maxPinsBytes bounds a pins file.
const maxPinsBytes = 64 << 10

// ReadPins reads a pins file: JSON of the shape of Pins, the fields of each chart named as
// chartarchive.PinnedChart names them (Chart, Version, Digest, URL). Only a build that is not a
// release reads one (scripts/release NOT_A_RELEASE=1): the rig's stand-ins under their own digests.
func ReadPins(file string) (Pins, error) {
	data, err := chartarchive.ReadFileBounded(file, maxPinsBytes)
	if err != nil {
		return Pins{}, fmt.Errorf("pins %s: %w", file, err)
	}
	var p Pins
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Pins{}, fmt.Errorf("pins %s: %w", file, err)
	}
	for _, pc := range p.Charts {
		if _, ok := chartarchive.Pinned(pc.Chart); !ok || pc.Version == "" || !strings.HasPrefix(pc.Digest, "sha256:") {
			return Pins{}, fmt.Errorf("pins %s: chart %q %q %q: want one of the guest charts, a version and a sha256: digest", file, pc.Chart, pc.Version, pc.Digest)
		}
	}
	for _, ref := range p.Images {
		if _, _, err := parsePinnedImage(ref); err != nil {
			return Pins{}, fmt.Errorf("pins %s: %w", file, err)
		}
	}
	return p, nil
}

// ChartSource is where the archives come from: a directory holding them by their upstream file
// names, or, with Dir empty, each archive's pinned URL, or <BaseURL>/<file> when BaseURL is set (a
// mirror of kube-vip's chart releases).
type ChartSource struct {
	Dir     string
	BaseURL string
	// Timeout bounds each fetch.
	Timeout time.Duration
}

// CollectCharts writes every pinned archive into dest (created if missing), each taken from src
// and held to its pinned digest first; an archive of another digest is refused naming its file,
// where it came from, the digest it has and the pinned one, and nothing of it is written.
func CollectCharts(ctx context.Context, pins []chartarchive.PinnedChart, src ChartSource, dest string) error {
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	for _, pc := range pins {
		from, data, err := src.read(ctx, pc)
		if err != nil {
			return fmt.Errorf("the %s chart %s: %w", pc.Chart, pc.Version, err)
		}
		if got := guestchart.Digest(data); got != pc.Digest {
			return fmt.Errorf("the %s chart %s: %s (from %s) has digest %s, not the pinned %s", pc.Chart, pc.Version, pc.File(), from, got, pc.Digest)
		}
		if err := os.WriteFile(filepath.Join(dest, pc.File()), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (s ChartSource) read(ctx context.Context, pc chartarchive.PinnedChart) (string, []byte, error) {
	if s.Dir != "" {
		file := filepath.Join(s.Dir, pc.File())
		data, err := chartarchive.ReadFileBounded(file, chartarchive.MaxArchiveBytes)
		return file, data, err
	}
	u := pc.URL
	if s.BaseURL != "" {
		base, err := url.Parse(s.BaseURL)
		if err != nil {
			return s.BaseURL, nil, err
		}
		base.Path = path.Join(base.Path, pc.File())
		u = base.String()
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return u, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return u, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return u, nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, chartarchive.MaxArchiveBytes+1))
	if err != nil {
		return u, nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if int64(len(data)) > chartarchive.MaxArchiveBytes {
		return u, nil, fmt.Errorf("GET %s: larger than %d KiB", u, chartarchive.MaxArchiveBytes>>10)
	}
	return u, data, nil
}

// parsePinnedImage reads <repository>:<tag>@sha256:<hex> into the tag and the digest.
func parsePinnedImage(ref string) (name.Tag, string, error) {
	base, digest, ok := strings.Cut(ref, "@")
	if !ok {
		return name.Tag{}, "", fmt.Errorf("image %q is not pinned by a digest (<repository>:<tag>@sha256:<hex>)", ref)
	}
	if _, err := name.NewDigest(ref); err != nil {
		return name.Tag{}, "", fmt.Errorf("image %q: %w", ref, err)
	}
	tag, err := name.NewTag(base)
	if err != nil {
		return name.Tag{}, "", fmt.Errorf("image %q: %w", ref, err)
	}
	if !strings.HasSuffix(base, ":"+tag.TagStr()) {
		return name.Tag{}, "", fmt.Errorf("image %q names no tag", ref)
	}
	return tag, digest, nil
}

// ImageMismatch is a pinned image whose registry answers another digest for its tag.
type ImageMismatch struct {
	// Image is the pinned reference, Resolved the tag looked up (in a mirror when one is set).
	Image    string
	Resolved string
	// Answered is the digest the registry answered, Pinned the one pinned.
	Answered string
	Pinned   string
}

func (m ImageMismatch) Error() string {
	return fmt.Sprintf("image %s: %s answers digest %s for the tag, not the pinned %s", m.Image, m.Resolved, m.Answered, m.Pinned)
}

// CheckImages resolves the tag of every pinned image in its registry, or, when mirror is set
// (host[:port][/path]), in that registry under the same repository path, as guestImages.registry
// moves the images, and returns an error for each whose digest is not the pinned one or that
// could not be resolved. Each lookup is bounded by timeout.
func CheckImages(ctx context.Context, images []string, mirror string, timeout time.Duration) error {
	var errs []error
	for _, ref := range images {
		tag, pinned, err := parsePinnedImage(ref)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		resolved := tag
		if mirror != "" {
			resolved, err = name.NewTag(strings.TrimSuffix(mirror, "/") + "/" + tag.RepositoryStr() + ":" + tag.TagStr())
			if err != nil {
				errs = append(errs, fmt.Errorf("image %s in the registry %s: %w", ref, mirror, err))
				continue
			}
		}
		c, cancel := context.WithTimeout(ctx, timeout)
		desc, err := remote.Head(resolved, remote.WithContext(c))
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("image %s: resolving %s: %w", ref, resolved, err))
			continue
		}
		if got := desc.Digest.String(); got != pinned {
			errs = append(errs, ImageMismatch{Image: ref, Resolved: resolved.String(), Answered: got, Pinned: pinned})
		}
	}
	return errors.Join(errs...)
}

// Push writes the image index of the OCI layout in dir (scripts/package's dist/image) to dest, a
// <registry>/<repository>:<tag> reference, with every platform's image and layer.
func Push(ctx context.Context, dir, dest string) (string, error) {
	ref, err := name.NewTag(dest, name.StrictValidation)
	if err != nil {
		return "", fmt.Errorf("push destination %q: %w", dest, err)
	}
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return "", fmt.Errorf("the image layout %s: %w", dir, err)
	}
	m, err := root.IndexManifest()
	if err != nil {
		return "", err
	}
	if len(m.Manifests) != 1 {
		return "", fmt.Errorf("the image layout %s holds %d indexes, not one", dir, len(m.Manifests))
	}
	idx, err := root.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		return "", err
	}
	if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	return m.Manifests[0].Digest.String(), nil
}
