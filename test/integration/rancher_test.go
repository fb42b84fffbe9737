package integration

import "strings"

// errorLinesAbout returns the operator's error-level log lines that mention any of words.
func errorLinesAbout(logs string, words ...string) []string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, "level=error") {
			continue
		}
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	return out
}
