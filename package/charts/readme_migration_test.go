package charts

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kubefip/kube-fip-operator/test/rig"
)

// TestMigrationStepsDoWhatTheySay: in the migration from the original operator (docs/operations.md),
// a step whose title says it stops the old operator has a command that stops it (scales its
// Deployment to 0 or deletes it), and comes before the step that installs the charts: the old
// operator and the new must not both write to the same FloatingIPs and ranges.
func TestMigrationStepsDoWhatTheySay(t *testing.T) {
	section, err := rig.DocSection("docs/operations.md", "## Migrating from the original kube-fip-operator")
	if err != nil {
		t.Fatal(err)
	}
	stepStart := regexp.MustCompile(`(?m)^(\d+)\. `)
	bounds := stepStart.FindAllStringIndex(section, -1)
	if len(bounds) < 2 {
		t.Fatalf("the migration has %d numbered steps", len(bounds))
	}
	stops := regexp.MustCompile(`kubectl\s+(-n\s+\S+\s+)?scale\s+deployment\s+\S+.*--replicas=0|kubectl\s+(-n\s+\S+\s+)?delete\s+deployment\b`)
	stopped, installed := -1, -1
	for i, b := range bounds {
		end := len(section)
		if i+1 < len(bounds) {
			end = bounds[i+1][0]
		}
		step := section[b[0]:end]
		title, _, _ := strings.Cut(step, "\n")
		if regexp.MustCompile(`(?i)\bstop\b`).MatchString(title) {
			if !stops.MatchString(step) {
				t.Errorf("migration step %q stops nothing: no kubectl scale deployment ... --replicas=0 or delete deployment", strings.TrimSpace(title))
			} else if stopped < 0 {
				stopped = i
			}
		}
		if installed < 0 && regexp.MustCompile(`(?i)\binstall\b.*\bcharts?\b`).MatchString(title) {
			installed = i
		}
	}
	switch {
	case stopped < 0:
		t.Error("no migration step stops the old operator")
	case installed < 0:
		t.Error("no migration step installs the charts")
	case stopped > installed:
		t.Errorf("the old operator is stopped in step %d, after the charts are installed in step %d", stopped+1, installed+1)
	}
}
