package guestcluster

import (
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
)

// servedTiming is which of the Served condition's failures judgeServed gives at once and which only
// once the grace period is over, from each state of the guest it judges.
func servedTiming(t *testing.T) (immediate, afterGrace []string) {
	t.Helper()
	addr := netip.MustParseAddr("192.0.2.1")
	ds := func(found, observed bool, desired, ready int32) *kubevipconfig.DaemonSetState {
		return &kubevipconfig.DaemonSetState{Namespace: "kube-system", Name: "kube-fip-kube-vip", Found: found, Observed: observed, Desired: desired, Ready: ready}
	}
	asked := []kubevipconfig.ServiceState{{Namespace: "default", Name: "web", Asks: []netip.Addr{addr}}}
	states := map[string]kubevipconfig.Serving{
		"DaemonSet missing":       {Kubevip: ds(false, false, 0, 0)},
		"DaemonSet rolling out":   {Kubevip: ds(true, false, 1, 0)},
		"no node matched":         {Kubevip: ds(true, true, 0, 0)},
		"no pod ready":            {Kubevip: ds(true, true, 1, 0)},
		"asked, not held":         {Kubevip: ds(true, true, 1, 1), Services: asked},
		"asked, no kube-vip read": {Services: asked},
		"read cut short":          {Kubevip: ds(true, true, 1, 1), Limited: "more than 100 Services"},
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const grace = 2 * time.Minute
	for name, s := range states {
		first := judgeServed(s, addr, "", now, grace)
		if first.ok {
			t.Fatalf("%s: judged served (%s); the test's state is wrong", name, first.reason)
		}
		if first.reason != v1.ReasonServePending {
			if !slices.Contains(immediate, first.reason) {
				immediate = append(immediate, first.reason)
			}
			continue
		}
		later := judgeServed(s, addr, first.pendingSince, now.Add(grace+time.Second), grace)
		if later.ok || later.reason == v1.ReasonServePending {
			t.Fatalf("%s: still %s past the grace period", name, later.reason)
		}
		if !slices.Contains(afterGrace, later.reason) {
			afterGrace = append(afterGrace, later.reason)
		}
	}
	slices.Sort(immediate)
	slices.Sort(afterGrace)
	return immediate, afterGrace
}

// TestServedTimingIsAsDocumented: concepts.md's list of what the Served condition says names, in
// its "At once" entry, exactly the failures judgeServed gives without waiting (a kube-vip DaemonSet
// that is gone or matches no node, a read cut short), and in the ServePending entry, past the grace period, exactly
// those it gives only once the grace is over; the reason table's ServePending row names the latter.
func TestServedTimingIsAsDocumented(t *testing.T) {
	immediate, afterGrace := servedTiming(t)
	if len(immediate) == 0 || len(afterGrace) == 0 {
		t.Fatalf("immediate %v, after the grace period %v: want both", immediate, afterGrace)
	}
	section, err := rig.DocSection("docs/concepts.md", "## Served: what the guest shows")
	if err != nil {
		t.Fatal(err)
	}
	judged := map[string]bool{}
	for _, r := range append(slices.Clone(immediate), afterGrace...) {
		judged[r] = true
	}
	named := func(text string) []string {
		var out []string
		for _, m := range regexp.MustCompile("`([A-Za-z]+)`").FindAllStringSubmatch(text, -1) {
			if judged[m[1]] && !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
		slices.Sort(out)
		return out
	}
	var atOnce, pending string
	for _, bullet := range regexp.MustCompile(`(?m)^- `).Split(section, -1) {
		flat := strings.Join(strings.Fields(bullet), " ")
		switch {
		case strings.HasPrefix(flat, "At once"):
			atOnce = flat
		case strings.HasPrefix(flat, "`"+v1.ReasonServePending+"`"):
			pending = flat
		}
	}
	if atOnce == "" || pending == "" {
		t.Fatalf("concepts.md's Served section has no entry starting \"At once\" or none for %s", v1.ReasonServePending)
	}
	if got := named(atOnce); !slices.Equal(got, immediate) {
		t.Errorf("concepts.md says %v come at once; judgeServed gives %v at once", got, immediate)
	}
	_, past, ok := strings.Cut(pending, "past it")
	if !ok {
		t.Fatalf("concepts.md's %s entry does not say what comes past the grace period (\"past it\")", v1.ReasonServePending)
	}
	if got := named(past); !slices.Equal(got, afterGrace) {
		t.Errorf("concepts.md says %v come past the grace period; judgeServed gives %v only then", got, afterGrace)
	}
	for _, row := range v1.ReasonTable() {
		if slices.Contains(row.Reasons, v1.ReasonServePending) {
			if got := named(row.Do); !slices.Equal(got, afterGrace) {
				t.Errorf("the reason table's %s row names %v; judgeServed gives %v past the grace period", v1.ReasonServePending, got, afterGrace)
			}
		}
	}
}
