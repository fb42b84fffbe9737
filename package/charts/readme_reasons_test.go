package charts

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kubefip/kube-fip-operator/test/rig"
)

// operatorReasons collects the reasons the operator's code defines: every Reason… and Problem…
// string constant under pkg/ (the API package's reasons.go, and pkg/config's problems).
func operatorReasons(t *testing.T) map[string]string {
	t.Helper()
	constant := regexp.MustCompile(`(?m)^\s*(?:const\s+)?((?:Reason|Problem)[A-Za-z]*)\s*(?:[A-Za-z.]+\s*)?=\s*"([A-Za-z]+)"`)
	reasons := map[string]string{} // reason -> the file defining it
	err := filepath.WalkDir(filepath.Join(repoRoot, "pkg"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		if strings.Contains(filepath.ToSlash(p), "/generated/") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range constant.FindAllStringSubmatch(string(data), -1) {
			reasons[m[2]] = p
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return reasons
}

// TestReadmeTroubleshootingReasons: the reason table of docs/troubleshooting.md (go generate writes
// it from the API's ReasonTable) has a row, with an action, for every reason the code defines, in a
// condition or only in Events, and lists no reason the operator does not give.
func TestReadmeTroubleshootingReasons(t *testing.T) {
	reasons := operatorReasons(t)
	if len(reasons) < 40 {
		t.Fatalf("found only %d reasons in pkg/; the scan misses the code", len(reasons))
	}
	section, err := rig.DocSection("docs/troubleshooting.md", "## Reasons")
	if err != nil {
		t.Fatal(err)
	}
	inTable := map[string]bool{}
	code := regexp.MustCompile("`([A-Za-z]+)`")
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		if strings.TrimSpace(cells[3]) == "" {
			t.Errorf("Troubleshooting row %q says nothing to do", strings.TrimSpace(line))
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			inTable[m[1]] = true
			if _, ok := reasons[m[1]]; !ok {
				t.Errorf("Troubleshooting lists %s, which no code of pkg/ gives as a reason", m[1])
			}
		}
	}
	for r, where := range reasons {
		if !inTable[r] {
			t.Errorf("reason %s (%s) has no row in the reason table of docs/troubleshooting.md", r, where)
		}
	}
}
