package charts

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
)

// TestGitIndexingFindsOnlyTheProductCharts looks at the repository as Rancher indexes a Git
// repository added to Apps & Marketplace (rancher/rancher pkg/catalogv2/git/index.go,
// buildOrGetIndex): every directory that is a Helm chart directory is listed as a chart, and an
// index.yaml anywhere would replace the whole listing. It must find the two product charts and
// nothing else: no stand-in chart of the tests, no stray index. Rancher indexes a checkout, which
// holds the files git tracks only: a local dist/ written by make package-helm is none of them.
func TestGitIndexingFindsOnlyTheProductCharts(t *testing.T) {
	root := filepath.Join("..", "..")
	files := checkoutFiles(t, root)
	var charts, indexes []string
	for _, f := range files {
		if path.Base(f) == "Chart.yaml" {
			dir := path.Dir(f)
			if ok, _ := chartutil.IsChartDir(filepath.Join(root, filepath.FromSlash(dir))); ok {
				charts = append(charts, dir)
			}
		}
	}
	// Rancher's walk does not enter a chart directory: neither a chart nor an index inside one counts.
	insideChart := func(p string, self bool) bool {
		for _, c := range charts {
			if (self && p == c) || strings.HasPrefix(p, c+"/") {
				return true
			}
		}
		return false
	}
	charts = slices.DeleteFunc(charts, func(c string) bool { return insideChart(c, false) })
	for _, f := range files {
		if path.Base(f) == "index.yaml" && !insideChart(path.Dir(f), true) {
			indexes = append(indexes, f)
		}
	}
	want := []string{"charts/" + OperatorChart, "charts/" + CRDChart}
	slices.Sort(charts)
	slices.Sort(want)
	if !slices.Equal(charts, want) {
		t.Errorf("Rancher's Git indexing would list the charts %v; want exactly %v", charts, want)
	}
	if len(indexes) > 0 {
		t.Errorf("index.yaml files %v would replace Rancher's listing of the repository", indexes)
	}
	if len(charts) == 0 {
		t.Fatal("no chart found at all: the listing looked in the wrong place")
	}
}

// checkoutFiles returns the files a checkout of the repository at root holds, slash-separated and
// relative to root: the files git tracks when root is in a git work tree, else every file but
// git's own.
func checkoutFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, f := range bytes.Split(out, []byte{0}) {
			if len(f) > 0 {
				files = append(files, string(f))
			}
		}
		if len(files) > 0 {
			return files
		}
	}
	var files []string
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.Name() == ".git" {
			if info.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !info.IsDir() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
