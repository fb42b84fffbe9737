package rig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ReadmeSection returns the text of the project README's section under heading (such as
// "## Troubleshooting" or "### Rancher Backups"): from the line after the heading to the next
// heading of the same or a higher level. Tests that hold the README to what the code does read
// their section with it.
func ReadmeSection(heading string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		return "", err
	}
	level := len(heading) - len(strings.TrimLeft(heading, "#"))
	if level == 0 {
		return "", fmt.Errorf("%q is not a Markdown heading", heading)
	}
	_, section, ok := strings.Cut(string(data), "\n"+heading+"\n")
	if !ok {
		return "", fmt.Errorf("README.md has no section %q", heading)
	}
	end := len(section)
	for l := 1; l <= level; l++ {
		if i := strings.Index(section, "\n"+strings.Repeat("#", l)+" "); i >= 0 && i < end {
			end = i
		}
	}
	return section[:end], nil
}
