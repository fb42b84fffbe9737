package leastprivilege

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// removalTimeout is how long a scenario may take before it counts as failed when a grant is
// missing. With every grant, each scenario passes within about a second of the one before it (see
// TestLeastPrivilegeUnderChartRBAC's figures), so three seconds leave room for a loaded machine; a
// false failure could only hide an unneeded grant, never remove a needed one, and a failure that
// the log does not explain is run again in a world of its own, with retryTimeout.
const removalTimeout = 3 * time.Second

// removalRow is one line of the rule-removal table.
type removalRow struct {
	grant   grant
	failed  string
	err     error
	refused bool // the API server refused the operator exactly this grant
	took    time.Duration
}

// retryTimeout is removalTimeout for a row run again: long enough that a scenario which failed
// only because a loaded machine started the operator late passes.
const retryTimeout = 30 * time.Second

// TestLeastPrivilegeRuleRemoval takes the chart's RBAC apart one grant at a time — each verb on
// each resource of each ClusterRole and Role — and runs the least-privilege scenarios as the
// chart's ServiceAccount without it. Every grant must be needed: some scenario fails without it,
// and the operator's log shows the API server refusing exactly that request. A grant no scenario
// needs does not belong in the chart. The table of grant, failing scenario and time is printed.
// The rows are shared out among as many control planes as suite.ShardsEnv says (the package's and
// API servers of their own on its etcd, shards): each row mostly waits for a scenario to fail, so
// the rows share the machine well.
func TestLeastPrivilegeRuleRemoval(t *testing.T) {
	begin := time.Now()
	workers, err := suite.ShardCount()
	if err != nil {
		t.Fatal(err)
	}
	grants := renderChartRBAC(t, shared.Suite, "kube-fip-lp-table").grants()
	if len(grants) >= retryWorld {
		t.Fatalf("%d grants: more than the %d worlds a run's address blocks leave room for", len(grants), retryWorld-1)
	}
	rows := make([]removalRow, len(grants))
	t.Run("rows", func(t *testing.T) {
		for w := range workers {
			t.Run(fmt.Sprint("worker-", w), func(t *testing.T) {
				t.Parallel()
				s := shared.Suite
				if w > 0 {
					s = s.StartShard(t, fmt.Sprint("lp-table-", w))
				}
				e := newLPEnv(t, s, "kube-fip-lp-table", "t", 182)
				// The baseline: with every grant, every scenario passes, so a failure below is the
				// grant's.
				if base := e.run(0, 45*time.Second); base.failed != "" {
					fmt.Fprintf(os.Stderr, "---- operator output (baseline) ----\n%s\n", base.logs)
					t.Fatalf("with the chart's full RBAC, scenario %s failed: %v", base.failed, base.err)
				}
				for i := w; i < len(grants); i += workers {
					g := grants[i]
					e.rbac.apply(t, &g)
					e.waitAuthorizer(g, false)
					row := e.removalRun(g, i+1, removalTimeout)
					if row.failed != "" && !row.refused {
						// A scenario that failed with no refusal in the log cannot be put down to
						// the grant: the row is run once more, in a world of its own and with
						// more time, before it counts against the chart.
						row = e.removalRun(g, retryWorld+i+1, retryTimeout)
					}
					rows[i] = row
					e.rbac.apply(t, nil)
					e.waitAuthorizer(g, true)
				}
			})
		}
	})
	if t.Failed() {
		return
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
	t.Logf("rule-removal table, %d grants on %d control planes, %.0fs in all:\n%s", len(rows), workers, time.Since(begin).Seconds(), table.String())

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

// removalRun runs world k's scenarios without grant g, timeout each, and reports whether the
// operator's log shows the API server refusing exactly g's request.
func (e *lpEnv) removalRun(g grant, k int, timeout time.Duration) removalRow {
	res := e.run(k, timeout)
	row := removalRow{grant: g, failed: res.failed, err: res.err, took: res.took}
	for _, r := range res.refused {
		row.refused = row.refused || g.covers(r)
	}
	if !row.refused {
		fmt.Fprintf(os.Stderr, "---- operator output (without %s, world %d) ----\n%s\n", g, k, rig.LastLines(res.logs, 80))
	}
	return row
}
