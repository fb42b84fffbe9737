package rig

import (
	"strings"
	"testing"
)

// TestDocSection: a section runs to the next heading of its level or higher, its own subsections
// included, and a shell comment in a code block is no heading; an unknown heading, a line that is
// no heading or a page that is not there is an error. ReadmeSection reads the README.
func TestDocSection(t *testing.T) {
	s, err := DocSection("docs/troubleshooting.md", "## Alert runbooks")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, "\n### KubeFIPRangeUsageHigh\n") || strings.Contains(s, "\n## ") {
		t.Errorf("## Alert runbooks: want its ### entries and no other ## section:\n%s", s)
	}
	s, err = DocSection("docs/troubleshooting.md", "### KubeFIPRangeUsageHigh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, "rangeUsageWarningPercent") || strings.Contains(s, "\n## ") || strings.Contains(s, "\n### ") {
		t.Errorf("### KubeFIPRangeUsageHigh: want its text up to the next heading:\n%s", s)
	}
	s, err = DocSection("docs/concepts.md", "## Address spaces")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, "\n# who holds") || !strings.Contains(s, "address per space") {
		t.Errorf("## Address spaces: want the whole section, past the shell comments of its code block:\n%s", s)
	}
	s, err = ReadmeSection("## Your first FloatingIP")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, "kind: FloatingIPRange") || strings.Contains(s, "\n## ") {
		t.Errorf("the README's ## Your first FloatingIP: want its steps and no other section:\n%s", s)
	}
	for _, bad := range []struct{ page, heading string }{
		{"README.md", "## No such section"}, {"README.md", "Your first FloatingIP"}, {"README.md", "##Contents"},
		{"docs/no-such-page.md", "## Contents"},
	} {
		if _, err := DocSection(bad.page, bad.heading); err == nil {
			t.Errorf("DocSection(%q, %q): no error", bad.page, bad.heading)
		}
	}
}
