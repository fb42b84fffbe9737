package rig

import (
	"strings"
	"testing"
)

// TestReadmeSection: a section runs to the next heading of its level or higher, its own
// subsections included; an unknown heading or a line that is no heading is an error.
func TestReadmeSection(t *testing.T) {
	s, err := ReadmeSection("## Troubleshooting")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, "\n### KubeFIPRangeUsageHigh\n") || strings.Contains(s, "\n## ") {
		t.Errorf("## Troubleshooting: want its ### entries and no other ## section:\n%s", s)
	}
	s, err = ReadmeSection("### Rancher Backups")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, "resourceSetName") || strings.Contains(s, "\n## ") || strings.Contains(s, "\n### ") {
		t.Errorf("### Rancher Backups: want its text up to the next heading:\n%s", s)
	}
	for _, bad := range []string{"## No such section", "Troubleshooting"} {
		if _, err := ReadmeSection(bad); err == nil {
			t.Errorf("ReadmeSection(%q): no error", bad)
		}
	}
}
