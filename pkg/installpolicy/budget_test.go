package installpolicy

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/approve"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/render"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// renderChildArg makes this test binary the render process, as the operator's render-chart
// command makes the operator's.
const renderChildArg = "render-chart"

func TestMain(m *testing.M) {
	if len(os.Args) >= 2 && os.Args[1] == renderChildArg {
		if len(os.Args) == 3 {
			startThreads(os.Args[2])
		}
		if err := render.Serve(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startThreads has the render process run on n more threads than it needs ("threads=<n>"), as a
// loaded machine makes the runtime start them: each blocks on a thread of its own.
func startThreads(arg string) {
	n, err := strconv.Atoi(strings.TrimPrefix(arg, "threads="))
	if err != nil {
		panic(err)
	}
	var locked sync.WaitGroup
	locked.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			runtime.LockOSThread()
			locked.Done()
			select {}
		}()
	}
	locked.Wait()
}

// budgeted is a policy that renders within budget, in a process of its own when own is set,
// which runs on threads more threads than it needs.
func budgeted(t testing.TB, own bool, budget render.Budget, threads ...int) Policy {
	t.Helper()
	s := DefaultSettings()
	s.RenderBudget = budget
	if own {
		s.RenderCommand = []string{os.Args[0], renderChildArg}
		for _, n := range threads {
			s.RenderCommand = append(s.RenderCommand, fmt.Sprintf("threads=%d", n))
		}
	}
	p, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The templates that overrun: a string doubled until it takes gigabytes, a loop of a hundred
// million steps, and a ConfigMap of 2 MiB.
const (
	doubling = `{{- $s := "0123456789abcdef" }}{{- range until 40 }}{{- $s = print $s $s }}{{- end }}{{ $s }}`
	looping  = `{{- range until 10000 }}{{- range until 10000 }}{{- end }}{{- end }}`
	large    = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: large\ndata:\n  x: {{ repeat 2097152 \"x\" }}\n"
)

// TestRenderInItsOwnProcess: a render in a process of its own gives what the render in this one
// gives; a template that builds without end ends its process at the memory budget, one that loops
// at the time budget, and one that renders too much at the output budget. Each of those charts is
// refused without a second render until its back-off ends, and this process's memory never holds
// what the template built.
func TestRenderInItsOwnProcess(t *testing.T) {
	defaults := config.Default().Kubevip.Values
	approve := func(p Policy, ch *helmchart.Chart) (*approve.Approval, error) {
		pl, err := p.NewPlan(guestchart.Kubevip, "kubevipChartValues", "", defaults, defaults)
		if err != nil {
			t.Fatal(err)
		}
		return pl.Approve(ch, release())
	}
	// The memory and output budgets are held to a time budget no loaded machine reaches first;
	// the time budget to one of 3 s.
	own := budgeted(t, true, render.Budget{Time: time.Minute, Output: 1 << 20, Memory: 128 << 20, Parallel: 1, Retry: time.Hour})
	timed := budgeted(t, true, render.Budget{Time: 3 * time.Second, Output: 1 << 20, Memory: 128 << 20, Parallel: 1, Retry: time.Hour})
	start := time.Now()
	a, err := approve(own, chartrepo.DefaultChart(guestchart.Kubevip))
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	b, err := approve(Default(), chartrepo.DefaultChart(guestchart.Kubevip))
	if err != nil || a.Digest != b.Digest {
		t.Errorf("in its own process the approval is %s; in this one %s (%v)", a.Digest, b.Digest, err)
	}
	t.Logf("the kube-vip stand-in approved, both renders each in a process of its own, in %s", took.Round(time.Millisecond))

	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, tc := range []struct {
		name, template, want string
		policy               Policy
	}{
		{"a string doubled without end", doubling, "needed more than the 128 MiB of memory a render may have", own},
		{"a loop of a hundred million steps", looping, "was still rendering after 3s", timed},
		{"a ConfigMap of 2 MiB", large, "more than the 1024 KiB a render may", own},
	} {
		ch := withTemplate(guestchart.Kubevip, "templates/overrun.yaml", tc.template)
		start := time.Now()
		_, err := approve(tc.policy, ch)
		took := time.Since(start)
		if reasonOf(err) != guestchart.ReasonRenderRefused || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want RenderedObjectRefused saying %q", tc.name, err, tc.want)
			continue
		}
		t.Logf("%s: refused after %s: %v", tc.name, took.Round(time.Millisecond), err)
		start = time.Now()
		_, err = approve(tc.policy, ch)
		if !strings.Contains(fmt.Sprint(err), "earlier: with these values it is rendered again after") || time.Since(start) > time.Second {
			t.Errorf("%s again: %v after %s; want refused at once without a render", tc.name, err, time.Since(start))
		}
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grown := int64(after.TotalAlloc) - int64(before.TotalAlloc); grown > 64<<20 {
		t.Errorf("this process allocated %d MiB while the renders overran in theirs", grown>>20)
	}
}

// TestRenderInThisProcess: without a process of its own, the wait for a render ends at the time
// budget and its chart is not rendered again with those values until its back-off ends; the
// output budget holds as well.
func TestRenderInThisProcess(t *testing.T) {
	defaults := config.Default().Kubevip.Values
	for _, tc := range []struct {
		name, template, want string
		time                 time.Duration
	}{
		{"a loop of nine million steps", `{{- range until 3000 }}{{- range until 3000 }}{{- end }}{{- end }}`, "was still rendering after 200ms", 200 * time.Millisecond},
		{"a ConfigMap of 2 MiB", large, "more than the 1024 KiB a render may", 10 * time.Second},
	} {
		p := budgeted(t, false, render.Budget{Time: tc.time, Output: 1 << 20, Memory: 128 << 20, Parallel: 2, Retry: time.Hour})
		pl, err := p.NewPlan(guestchart.Kubevip, "kubevipChartValues", "", defaults, defaults)
		if err != nil {
			t.Fatal(err)
		}
		ch := withTemplate(guestchart.Kubevip, "templates/overrun.yaml", tc.template)
		if _, err := pl.Approve(ch, release()); reasonOf(err) != guestchart.ReasonRenderRefused || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want RenderedObjectRefused saying %q", tc.name, err, tc.want)
		}
		if _, err := pl.Approve(ch, release()); !strings.Contains(fmt.Sprint(err), "earlier: with these values it is rendered again after") {
			t.Errorf("%s again: %v; want refused without a render", tc.name, err)
		}
	}
}

// TestRenderBudgetHoldsOnALoadedMachine: a render process that runs on 24 more threads than it
// needs, as a loaded machine has the runtime start them, renders the pinned charts within the
// default budget, whether the binary was built with cgo (each thread's stack then counts as data)
// or without; a template that builds without end is still ended at the budget. scripts/test runs
// it both ways.
func TestRenderBudgetHoldsOnALoadedMachine(t *testing.T) {
	budget := render.DefaultBudget()
	budget.Time = time.Minute // no loaded machine reaches it before the memory budget
	loaded := budgeted(t, true, budget, 24)
	for _, chart := range []guestchart.Chart{guestchart.Kubevip, guestchart.CloudProvider} {
		defaults, key := config.Default().Kubevip.Values, "kubevipChartValues"
		if chart == guestchart.CloudProvider {
			defaults, key = config.Default().KubevipCloudProvider.Values, "kubevipCloudProviderChartValues"
		}
		pl, err := loaded.NewPlan(chart, key, "", defaults, defaults)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pl.Approve(chartrepo.DefaultChart(chart), release()); err != nil {
			t.Errorf("the %s chart in a render process on 24 more threads (CGO_ENABLED=%s): %v; want it approved", chart, cgoEnabled(), err)
		}
		_, err = pl.Approve(withTemplate(chart, "templates/overrun.yaml", doubling), release())
		if reasonOf(err) != guestchart.ReasonRenderRefused || !strings.Contains(err.Error(), "needed more than the 128 MiB") {
			t.Errorf("the %s chart with a string doubled without end (CGO_ENABLED=%s): %v; want refused at the memory budget", chart, cgoEnabled(), err)
		}
	}
}

// cgoEnabled says whether this test binary was built with cgo, as its build settings say.
func cgoEnabled() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "CGO_ENABLED" {
				return s.Value
			}
		}
	}
	return "unknown"
}
