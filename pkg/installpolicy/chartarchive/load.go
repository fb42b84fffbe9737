package chartarchive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"sync"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// Package is a chart archive Load let through: its digest pinned or allowed for the chart,
// within the archive bounds, loaded, and not holding anything CheckChart refuses. The same digest
// is the same archive, so a Package is shared by every install of it and must not be changed.
type Package struct {
	Chart *helmchart.Chart
	// Digest is "sha256:<hex>" of the archive.
	Digest string
}

// Bounds on a chart archive. The pinned charts are about 14 KiB unpacked (kube-vip 0.9.9's largest
// file, values.yaml, is 3.7 KiB) and 4 KiB packed; these leave a wide margin while keeping what one
// archive makes the operator hold small: Helm's loader keeps every file, and parses values.yaml
// into a map that takes up to about a hundred times its size.
const (
	// MaxArchiveBytes bounds an archive as fetched.
	MaxArchiveBytes = 1 << 20
	// maxUnpackedBytes bounds the archive unpacked (the tar stream, headers included), and so the
	// files Helm's loader keeps of it.
	maxUnpackedBytes = 1 << 20
	// maxFileBytes bounds one file of the archive.
	maxFileBytes = 256 << 10
	// maxValuesBytes bounds values.yaml, which Helm parses when it loads the chart.
	maxValuesBytes = 64 << 10
)

// Load returns the archive data of chart as a Package when its digest is pinned or allowed for
// that chart: the digest is checked before anything of the archive is unpacked. The archive is then
// held to the bounds above, loaded with Helm's loader and checked with CheckChart against version
// ("" for any). It returns a *guestchart.Refusal with ReasonChartRefused otherwise. A digest loaded
// before is not loaded again.
func (a Archives) Load(chart guestchart.Chart, version string, data []byte) (*Package, error) {
	digest := guestchart.Digest(data)
	if err := a.CheckDigest(chart, digest); err != nil {
		return nil, err
	}
	pkg, ok := a.packages.get(digest)
	if !ok {
		ch, err := loadBounded(data)
		if err != nil {
			return nil, guestchart.Refuse(guestchart.ReasonChartRefused, "", "the %s chart archive %s is refused: %v", chart, digest, err)
		}
		pkg = &Package{Chart: ch, Digest: digest}
		a.packages.put(pkg)
	}
	if err := CheckChart(chart, pkg.Chart, version); err != nil {
		return nil, err
	}
	return pkg, nil
}

// loadBounded unpacks the archive once without keeping anything, to hold it to the bounds, and
// then loads it with Helm's loader, whose own limits (100 MiB unpacked, 5 MiB a file) are far
// above these. A panic on malformed content becomes an error.
func loadBounded(data []byte) (ch *helmchart.Chart, err error) {
	if len(data) > MaxArchiveBytes {
		return nil, fmt.Errorf("it is larger than %d KiB", MaxArchiveBytes>>10)
	}
	if err := checkUnpacked(data); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			ch, err = nil, fmt.Errorf("it is malformed: %v", r)
		}
	}()
	ch, err = loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("it does not load: %s", guestchart.Shorten(err.Error()))
	}
	return ch, nil
}

// checkUnpacked reads the archive's tar stream within maxUnpackedBytes and refuses a file over
// maxFileBytes, or a values.yaml over maxValuesBytes.
func checkUnpacked(data []byte) error {
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return errors.New("it is not a gzip archive")
	}
	stream := &io.LimitedReader{R: gz, N: maxUnpackedBytes + 1}
	tr := tar.NewReader(stream)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			limit := int64(maxFileBytes)
			if path.Base(h.Name) == "values.yaml" {
				limit = maxValuesBytes
			}
			if h.Size > limit {
				return fmt.Errorf("its file %s is larger than %d KiB", guestchart.Shorten(h.Name), limit>>10)
			}
			_, err = io.Copy(io.Discard, tr)
		}
		if err != nil && stream.N <= 0 {
			return fmt.Errorf("it unpacks to more than %d KiB", maxUnpackedBytes>>10)
		}
		if err != nil {
			return errors.New("it is not a tar archive")
		}
	}
	// What follows the tar stream counts too: the loader does not read it, but a gzip stream
	// that goes on is no chart archive.
	if _, err := io.Copy(io.Discard, stream); err != nil {
		return errors.New("it is not a gzip archive")
	}
	if stream.N <= 0 {
		return fmt.Errorf("it unpacks to more than %d KiB", maxUnpackedBytes>>10)
	}
	return nil
}

// packageCacheSize bounds the packages a policy keeps: the two pinned ones and a few allowed.
const packageCacheSize = 8

// packageCache keeps the packages loaded last, by digest, so that a chart is loaded once rather
// than on every guest pass. Its memory is bounded by its size and the archive bounds.
type packageCache struct {
	mu   sync.Mutex
	pkgs []*Package // the most recently used last
}

func (c *packageCache) get(digest string) (*Package, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, p := range c.pkgs {
		if p.Digest == digest {
			c.pkgs = append(append(c.pkgs[:i:i], c.pkgs[i+1:]...), p)
			return p, true
		}
	}
	return nil, false
}

func (c *packageCache) put(p *Package) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pkgs) >= packageCacheSize {
		c.pkgs = append(c.pkgs[:0:0], c.pkgs[1:]...)
	}
	c.pkgs = append(c.pkgs, p)
}

// DigestOf is the digest of the loaded package whose chart is ch, or "".
func (a Archives) DigestOf(ch *helmchart.Chart) string {
	c := a.packages
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pkgs {
		if p.Chart == ch {
			return p.Digest
		}
	}
	return ""
}
