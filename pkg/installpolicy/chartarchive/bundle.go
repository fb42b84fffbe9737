package chartarchive

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// DefaultGuestChartsDir is where the release image holds the pinned chart archives
// (package/image), under their upstream file names.
const DefaultGuestChartsDir = "/usr/share/kube-fip-operator/guest-charts"

// Bundle is the pinned chart archives the operator ships, loaded and checked at start. It is
// empty when the image holds none: the pinned charts are then fetched, and held to their digests
// like any other.
type Bundle struct {
	packages map[guestchart.Chart]*Package
}

// LoadBundle reads the pinned archive of each chart from dir (PinnedChart.File) and checks it as
// any chart is checked: its digest pinned or allowed for that chart, within the archive bounds,
// of the pinned version, with nothing CheckChart refuses. An archive that fails stops the operator:
// the image is not what was built. A missing directory or archive is not an error; notes say what
// is missing, for one log line at start.
func (a Archives) LoadBundle(dir string) (Bundle, []string, error) {
	b := Bundle{packages: map[guestchart.Chart]*Package{}}
	if dir == "" {
		return b, []string{"no directory of bundled charts is set: the pinned charts are fetched"}, nil
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return b, []string{fmt.Sprintf("the directory of bundled charts %s does not exist: the pinned charts are fetched", dir)}, nil
	}
	var notes []string
	for _, pc := range PinnedCharts() {
		path := filepath.Join(dir, pc.File())
		data, err := ReadFileBounded(path, MaxArchiveBytes)
		if errors.Is(err, fs.ErrNotExist) {
			notes = append(notes, fmt.Sprintf("%s is not there: the %s chart %s is fetched", path, pc.Chart, pc.Version))
			continue
		}
		if err != nil {
			return Bundle{}, nil, fmt.Errorf("the bundled chart %s: %w", path, err)
		}
		pkg, err := a.Load(pc.Chart, pc.Version, data)
		if err != nil {
			return Bundle{}, nil, fmt.Errorf("the bundled chart %s: %w", path, err)
		}
		b.packages[pc.Chart] = pkg
		notes = append(notes, fmt.Sprintf("%s %s is installed from %s (%s)", pc.Chart, pc.Version, path, pkg.Digest))
	}
	return b, notes, nil
}

// ReadFileBounded reads a file of at most max bytes; a larger one is an error.
func ReadFileBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("it is larger than %d KiB", max>>10)
	}
	return data, nil
}

// Fetched reports whether the pinned archive of chart is what kube-fip-config asks for from
// repoURL or ref at version (ServedByPinned) while b does not hold it: it is then fetched from the
// network instead of installed from the image.
func (b Bundle) Fetched(chart guestchart.Chart, repoURL, ref, version string) bool {
	return ServedByPinned(chart, repoURL, ref, version) && b.packages[chart] == nil
}

// For is the bundled package to install when kube-fip-config asks chart from repoURL or ref at
// version, or nil: only the pinned version from an upstream Helm repository (ServedByPinned).
func (b Bundle) For(chart guestchart.Chart, repoURL, ref, version string) *Package {
	if !ServedByPinned(chart, repoURL, ref, version) {
		return nil
	}
	return b.packages[chart]
}
