package rig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DocSection returns the text of the section under heading (such as "## Reasons" or
// "### KubeFIPRangeUsageHigh") of page, a Markdown file named by its path from the repository root
// ("README.md", "docs/troubleshooting.md"): from the line after the heading to the next heading of
// the same or a higher level. Lines inside fenced code blocks are never headings, so a shell
// comment in a block does not end a section. Tests that hold the documentation to what the code
// does read their section with it.
func DocSection(page, heading string) (string, error) {
	level := len(heading) - len(strings.TrimLeft(heading, "#"))
	if level == 0 || !strings.HasPrefix(heading[level:], " ") {
		return "", fmt.Errorf("%q is not a Markdown heading", heading)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
	if err != nil {
		return "", err
	}
	var out []string
	in, fenced := false, false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if !fenced {
			if l := headingLevel(line); l > 0 {
				if in && l <= level {
					break
				}
				if !in && line == heading {
					in = true
					continue
				}
			}
		}
		if in {
			out = append(out, line)
		}
	}
	if !in {
		return "", fmt.Errorf("%s has no section %q", page, heading)
	}
	return strings.Join(out, "\n"), nil
}

// ReadmeSection is DocSection of the project README.
func ReadmeSection(heading string) (string, error) {
	return DocSection("README.md", heading)
}

// headingLevel is the level of a Markdown heading line ("## Reasons": 2), 0 for another line.
func headingLevel(line string) int {
	l := len(line) - len(strings.TrimLeft(line, "#"))
	if l == 0 || l > 6 || !strings.HasPrefix(line[l:], " ") {
		return 0
	}
	return l
}
