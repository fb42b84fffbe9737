package charts

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the repository root, seen from this package's directory.
var repoRoot = filepath.Join("..", "..")

// docFileRefs finds a reference to a Markdown file with an anchor anywhere in a text: a relative path
// ("docs/design.md#metrics", or from docs/ up to the README) or a GitHub URL of this repository's file
// (".../blob/main/README.md#troubleshooting").
var docFileRefs = regexp.MustCompile(`([A-Za-z0-9_./:-]*\.md)#([A-Za-z0-9_-]+)`)

// markdownLinks finds the targets of Markdown links: "](target)".
var markdownLinks = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocumentLinks: every reference into the project's documents with an anchor — a Markdown link
// in any .md file, or a path or GitHub URL of a .md file with an anchor in any source, chart or
// test file (NOTES.txt, questions.yaml, values.yaml, Go comments) — names a file of the repository
// and a heading of that file, as GitHub makes anchors. Markdown links to a repository file without
// an anchor name a file that exists. So moving a section between the README and docs/ cannot leave
// a link behind.
func TestDocumentLinks(t *testing.T) {
	headings := map[string]map[string]bool{} // repository path -> anchors
	anchorsOf := func(rel string) (map[string]bool, bool) {
		if a, ok := headings[rel]; ok {
			return a, a != nil
		}
		data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(rel)))
		if err != nil {
			headings[rel] = nil
			return nil, false
		}
		a := map[string]bool{}
		for _, h := range readmeHeadings(string(data)) {
			a[h.anchor] = true
		}
		headings[rel] = a
		return a, true
	}
	checked := map[[3]string]bool{}
	check := func(from, target, anchor string) {
		t.Helper()
		key := [3]string{from, target, anchor}
		if checked[key] {
			return
		}
		checked[key] = true
		a, ok := anchorsOf(target)
		switch {
		case !ok:
			t.Errorf("%s links %s#%s: no such file", from, target, anchor)
		case anchor != "" && !a[anchor]:
			t.Errorf("%s links %s#%s: %s has no such heading", from, target, anchor, target)
		}
	}

	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "dist", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		switch path.Ext(rel) {
		case ".md", ".go", ".yaml", ".yml", ".txt", ".tpl", ".json", ".sh", "":
		default:
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		text := string(data)
		dir := path.Dir(rel)
		if path.Ext(rel) == ".md" {
			for _, m := range markdownLinks.FindAllStringSubmatch(text, -1) {
				target, anchor, _ := strings.Cut(m[1], "#")
				if strings.Contains(target, ":") {
					continue // a URL; those into this repository are checked below
				}
				if target == "" {
					target = rel
				} else {
					target = path.Join(dir, target)
				}
				check(rel, target, anchor)
			}
		}
		for _, m := range docFileRefs.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if i := strings.Index(target, "/blob/"); i >= 0 {
				if !strings.Contains(target, "github.com/kubefip/kube-fip-operator/blob/") {
					continue // another project's document
				}
				// .../blob/<branch>/<path>
				_, after, _ := strings.Cut(target[i+len("/blob/"):], "/")
				target = after
			} else if strings.Contains(target, ":") {
				continue
			} else if _, ok := anchorsOf(path.Join(dir, target)); ok {
				target = path.Join(dir, target)
			} else {
				target = path.Clean(target) // written from the repository root, as in comments
			}
			check(rel, target, m[2])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(checked) < 20 {
		t.Errorf("only %d links checked; the walk misses the documents", len(checked))
	}
}
