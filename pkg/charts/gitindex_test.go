package charts

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
)

// TestGitIndexingFindsOnlyTheProductCharts walks the repository as Rancher indexes a Git
// repository added to Apps & Marketplace (rancher/rancher pkg/catalogv2/git/index.go,
// buildOrGetIndex): every directory that is a Helm chart directory is listed as a chart, and an
// index.yaml anywhere would replace the whole listing. It must find the two product charts and
// nothing else: no stand-in chart of the tests, no stray index.
func TestGitIndexingFindsOnlyTheProductCharts(t *testing.T) {
	root := filepath.Join("..", "..")
	var charts, indexes []string
	err := filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if info.IsDir() && info.Name() == ".git" {
			return filepath.SkipDir // Rancher indexes a checkout; git's own files are no charts
		}
		if info.Name() == "index.yaml" {
			indexes = append(indexes, rel)
		}
		if !info.IsDir() {
			return nil
		}
		if ok, _ := chartutil.IsChartDir(path); ok {
			charts = append(charts, rel)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join("charts", OperatorChart), filepath.Join("charts", CRDChart)}
	slices.Sort(charts)
	slices.Sort(want)
	if !slices.Equal(charts, want) {
		t.Errorf("Rancher's Git indexing would list the charts %v; want exactly %v", charts, want)
	}
	if len(indexes) > 0 {
		t.Errorf("index.yaml files %v would replace Rancher's listing of the repository", indexes)
	}
	if len(charts) == 0 {
		t.Fatal("no chart found at all: the walk looked in the wrong place")
	}
}
