package charts

import (
	"fmt"
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
