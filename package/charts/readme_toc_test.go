package charts

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// readmeHeading is one Markdown heading of the project README, outside code blocks.
type readmeHeading struct {
	level  int
	text   string
	anchor string
}

// githubAnchor is the anchor GitHub gives a heading: lower case, every character other than a
// letter, a digit, a space, '-' or '_' dropped, spaces turned into '-'.
func githubAnchor(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// readmeHeadings lists the headings of a Markdown text in order, skipping fenced code blocks, with
// GitHub's anchors (a repeated anchor gets -1, -2, … as on GitHub).
func readmeHeadings(text string) []readmeHeading {
	var headings []readmeHeading
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		level := len(line) - len(strings.TrimLeft(line, "#"))
		if level == 0 || level > 6 || !strings.HasPrefix(line[level:], " ") {
			continue
		}
		h := readmeHeading{level: level, text: strings.TrimSpace(line[level:])}
		h.anchor = githubAnchor(h.text)
		if n := seen[h.anchor]; n > 0 {
			seen[h.anchor] = n + 1
			h.anchor = fmt.Sprintf("%s-%d", h.anchor, n)
		} else {
			seen[h.anchor] = 1
		}
		headings = append(headings, h)
	}
	return headings
}

func TestGithubAnchor(t *testing.T) {
	for text, want := range map[string]string{
		"Install from Apps & Marketplace":                    "install-from-apps--marketplace",
		"Address spaces: one private range on many sites":    "address-spaces-one-private-range-on-many-sites",
		"FloatingIP (namespaced; short names `fip`, `fips`)": "floatingip-namespaced-short-names-fip-fips",
		"Migrating from the original kube-fip-operator":      "migrating-from-the-original-kube-fip-operator",
	} {
		if got := githubAnchor(text); got != want {
			t.Errorf("githubAnchor(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestReadmeTableOfContents: the table of contents (the "## Contents" section) of the project
// README and of every page of docs/ links every "##" section of its page, in the page's order,
// under its own title, and nothing else; and every link to an anchor of the same page, in the
// contents or in the text, names a heading.
func TestReadmeTableOfContents(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(repoRoot, "README.md")}, pages...)
	if len(pages) < 8 {
		t.Fatalf("found %d pages: %v", len(pages), pages)
	}
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(repoRoot, page)
		checkContents(t, name, string(data))
	}
}

// checkContents holds one page's "## Contents" to its sections and its local links to its headings.
func checkContents(t *testing.T, name, text string) {
	t.Helper()
	headings := readmeHeadings(text)
	anchors := map[string]bool{}
	var sections []readmeHeading
	for _, h := range headings {
		anchors[h.anchor] = true
		if h.level == 2 && h.text != "Contents" {
			sections = append(sections, h)
		}
	}

	_, toc, ok := strings.Cut(text, "\n## Contents\n")
	if !ok {
		t.Errorf(`%s has no "## Contents" section`, name)
		return
	}
	if i := strings.Index(toc, "\n#"); i >= 0 {
		toc = toc[:i]
	}
	entry := regexp.MustCompile(`^- \[(.+)\]\(#([^)]+)\)$`)
	var entries [][]string
	for _, line := range strings.Split(toc, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		m := entry.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("%s contents: %q is not a link to a section", name, line)
			continue
		}
		entries = append(entries, m)
		if !anchors[m[2]] {
			t.Errorf("%s contents: %q links #%s, which no heading has", name, m[1], m[2])
		}
	}
	for i, s := range sections {
		if i >= len(entries) {
			t.Errorf("%s contents: section %q (#%s) is missing", name, s.text, s.anchor)
			continue
		}
		if entries[i][2] != s.anchor || entries[i][1] != s.text {
			t.Errorf("%s contents entry %d is [%s](#%s); want [%s](#%s)", name, i+1, entries[i][1], entries[i][2], s.text, s.anchor)
		}
	}
	if len(entries) > len(sections) {
		for _, e := range entries[len(sections):] {
			t.Errorf("%s contents: extra entry [%s](#%s)", name, e[1], e[2])
		}
	}

	for _, m := range regexp.MustCompile(`\]\(#([^)\s]+)\)`).FindAllStringSubmatch(text, -1) {
		if !anchors[m[1]] {
			t.Errorf("%s links #%s, which no heading has", name, m[1])
		}
	}
}
