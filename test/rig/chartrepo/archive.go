package chartrepo

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// archiveTime is every file's time in an archive Archive packs: fixed, so that one chart always
// packs to the same bytes.
func archiveTime() time.Time { return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) }

// Archive packages c as Helm packages a chart (chartutil.Save), with every file's time fixed: the
// same chart gives the same archive and digest each time, so that a test can allow the charts it
// serves by digest, as a deployment allows the charts it reviewed.
func Archive(c *chart.Chart) ([]byte, error) {
	dir, err := os.MkdirTemp("", "kube-fip-chart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path, err := chartutil.Save(c, dir)
	if err != nil {
		return nil, fmt.Errorf("packaging test chart %s: %w", c.Name(), err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) || !strings.HasSuffix(path, ".tgz") {
		return nil, fmt.Errorf("%s is not a chart archive", path)
	}
	return fixTimes(data)
}

// fixTimes rewrites a chart archive with every file's time set to archiveTime.
func fixTimes(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Header.Extra, zw.Header.Comment, zw.Header.Name = zr.Header.Extra, zr.Header.Comment, zr.Header.Name
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		h.ModTime, h.AccessTime, h.ChangeTime = archiveTime(), time.Time{}, time.Time{}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// WriteArchive writes c's Archive into dir as <name>-<version>.tgz, as a repository and the image's
// directory of bundled charts hold it, and returns its path.
func WriteArchive(c *chart.Chart, dir string) (string, error) {
	data, err := Archive(c)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%s.tgz", c.Name(), c.Metadata.Version))
	return path, os.WriteFile(path, data, 0o644)
}

// Digest is the "sha256:<hex>" digest of c's Archive.
func Digest(c *chart.Chart) string {
	data, err := Archive(c)
	if err != nil {
		// The stand-ins are compiled in and always package: a failure is a broken build.
		panic(err)
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// DigestEntries are the entries of --allowed-chart-digests (<chart>@sha256:<hex>) that allow the
// archives of charts.
func DigestEntries(charts ...*chart.Chart) []string {
	out := make([]string, len(charts))
	for i, c := range charts {
		out[i] = c.Name() + "@" + Digest(c)
	}
	return out
}

// AllowDigestsArg is the operator flag that allows the archives of charts by digest.
func AllowDigestsArg(charts ...*chart.Chart) string {
	return "--allowed-chart-digests=" + strings.Join(DigestEntries(charts...), ",")
}
