package leastprivilege

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kubefip/kube-fip-operator/test/rig"
)

// removalTimeout is how long a scenario may take before it counts as failed when a grant is
// missing. With every grant, each scenario passes within about a second of the one before it (see
// TestLeastPrivilegeUnderChartRBAC's figures), so three seconds leave room for a loaded machine; a
// false failure could only hide an unneeded grant, never remove a needed one, and a failure that
// the log does not explain is run again in a world of its own.
const removalTimeout = 3 * time.Second

// removalRow is one line of the rule-removal table.
type removalRow struct {
	grant   grant
	failed  string
	err     error
	refused bool // the API server refused the operator exactly this grant
	took    time.Duration
}

// TestLeastPrivilegeRuleRemoval takes the chart's RBAC apart one grant at a time — each verb on
// each resource of each ClusterRole and Role — and runs the least-privilege scenarios as the
// chart's ServiceAccount without it. Every grant must be needed: some scenario fails without it,
// and the operator's log shows the API server refusing exactly that request. A grant no scenario
// needs does not belong in the chart. The table of grant, failing scenario and time is printed.
func TestLeastPrivilegeRuleRemoval(t *testing.T) {
	begin := time.Now()
	e := newLPEnv(t, "kube-fip-lp-table", "t", 182)
	grants := e.rbac.grants()

	// The baseline: with every grant, every scenario passes, so a failure below is the grant's.
	if base := e.run(0, 45*time.Second); base.failed != "" {
		fmt.Fprintf(os.Stderr, "---- operator output (baseline) ----\n%s\n", base.logs)
		t.Fatalf("with the chart's full RBAC, scenario %s failed: %v", base.failed, base.err)
	}

	if len(grants) >= retryWorld {
		t.Fatalf("%d grants: more than the %d worlds a run's address blocks leave room for", len(grants), retryWorld-1)
	}
	rows := make([]removalRow, 0, len(grants))
	for i, g := range grants {
		e.rbac.apply(t, &g)
		e.waitAuthorizer(g, false)
		row := e.removalRun(g, i+1)
		if row.failed != "" && !row.refused {
			// A scenario that failed with no refusal in the log cannot be put down to the grant:
			// the row is run once more, in a world of its own, before it counts against the chart.
			row = e.removalRun(g, retryWorld+i+1)
		}
		rows = append(rows, row)
		e.rbac.apply(t, nil)
		e.waitAuthorizer(g, true)
	}

	var table strings.Builder
	fmt.Fprintf(&table, "%-58s %-17s %-8s %6s\n", "grant removed", "failing scenario", "refused", "time")
	for _, row := range rows {
		failed := row.failed
		if failed == "" {
			failed = "(none)"
		}
		fmt.Fprintf(&table, "%-58s %-17s %-8v %5.1fs\n", row.grant.role+": "+row.grant.String(), failed, row.refused, row.took.Seconds())
	}
	t.Logf("rule-removal table, %d grants, %.0fs in all:\n%s", len(rows), time.Since(begin).Seconds(), table.String())

	for _, row := range rows {
		switch {
		case row.failed == "":
			t.Errorf("%s: %s: every scenario passed without it; no scenario needs it, so the chart must not grant it",
				row.grant.role, row.grant)
		case !row.refused:
			t.Errorf("%s: %s: scenario %s failed (%v), but the operator's log shows no refusal of that request",
				row.grant.role, row.grant, row.failed, row.err)
		}
	}
}

// retryWorld is where the worlds of repeated rows are numbered from: world k takes the blocks
// 10.<octet>.k.0/28 and 10.<octet>.(128+k).0/28, so k stays below 128.
const retryWorld = 64

// removalRun runs world k's scenarios without grant g and reports whether the operator's log
// shows the API server refusing exactly g's request.
func (e *lpEnv) removalRun(g grant, k int) removalRow {
	res := e.run(k, removalTimeout)
	row := removalRow{grant: g, failed: res.failed, err: res.err, took: res.took}
	for _, r := range res.refused {
		row.refused = row.refused || g.covers(r)
	}
	if !row.refused {
		fmt.Fprintf(os.Stderr, "---- operator output (without %s, world %d) ----\n%s\n", g, k, rig.LastLines(res.logs, 80))
	}
	return row
}
