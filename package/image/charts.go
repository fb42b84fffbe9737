package image

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// guestChartsLayer is the layer of the pinned guest chart archives in dir, at
// chartarchive.DefaultGuestChartsDir, where the operator installs them from without fetching. Each
// file of dir must be the archive of one of pinned (by its upstream file name) with its pinned
// digest, and every one of pinned must be there: an image carries the upstream archives it was
// reviewed with, or none. It returns a nil layer and no error when dir is "".
func guestChartsLayer(dir string, pinned []chartarchive.PinnedChart) (v1.Layer, []string, error) {
	if dir == "" {
		return nil, nil, nil
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("image: the guest charts: %w", err)
	}
	byFile := map[string]chartarchive.PinnedChart{}
	for _, pc := range pinned {
		byFile[pc.File()] = pc
	}
	root := strings.TrimPrefix(chartarchive.DefaultGuestChartsDir, "/")
	entries := []entry{}
	for p := root; p != "."; p = path.Dir(p) {
		entries = append([]entry{{name: p + "/", mode: 0o755, dir: true}}, entries...)
	}
	var names []string
	for _, f := range files {
		pc, ok := byFile[f.Name()]
		if !ok || !f.Type().IsRegular() {
			return nil, nil, fmt.Errorf("image: the guest charts: %s is not the archive of a pinned chart (%s)", f.Name(), pinnedFiles(pinned))
		}
		data, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			return nil, nil, fmt.Errorf("image: the guest charts: %w", err)
		}
		if got := guestchart.Digest(data); got != pc.Digest {
			return nil, nil, fmt.Errorf("image: the guest charts: %s has digest %s, not the pinned %s (%s)", f.Name(), got, pc.Digest, pc.URL)
		}
		entries = append(entries, entry{name: root + "/" + f.Name(), mode: 0o644, data: data})
		names = append(names, f.Name())
		delete(byFile, f.Name())
	}
	if len(byFile) > 0 {
		return nil, nil, fmt.Errorf("image: the guest charts: %s holds no %s", dir, strings.Join(sortedKeys(byFile), ", "))
	}
	l, err := layer(entries)
	return l, names, err
}

func pinnedFiles(pinned []chartarchive.PinnedChart) string {
	out := make([]string, len(pinned))
	for i, pc := range pinned {
		out[i] = pc.File()
	}
	return strings.Join(out, ", ")
}

func sortedKeys(m map[string]chartarchive.PinnedChart) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
