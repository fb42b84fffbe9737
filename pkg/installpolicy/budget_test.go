package installpolicy

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/kubefip/kube-fip-operator/pkg/config"
)

// renderChildArg makes this test binary the render process, as the operator's render-chart
// command makes the operator's.
const renderChildArg = "render-chart"

func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == renderChildArg {
		if err := ServeRender(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// budgeted is a policy that renders within budget, in a process of its own when own is set.
func budgeted(t testing.TB, own bool, budget RenderBudget) Policy {
	t.Helper()
	s := DefaultSettings()
	s.RenderBudget = budget
	if own {
		s.RenderCommand = []string{os.Args[0], renderChildArg}
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
// refused without a second render after that, and this process's memory never holds what the
// template built.
func TestRenderInItsOwnProcess(t *testing.T) {
	defaults := config.Default().Kubevip.Values
	approve := func(p Policy, ch *helmchart.Chart) (*Approval, error) {
		pl, err := p.NewPlan(Kubevip, "kubevipChartValues", "", defaults, defaults)
		if err != nil {
			t.Fatal(err)
		}
		return pl.Approve(ch, release())
	}
	own := budgeted(t, true, RenderBudget{Time: 5 * time.Second, Output: 1 << 20, Memory: 128 << 20, Parallel: 1})
	start := time.Now()
	a, err := approve(own, standIn(Kubevip))
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	b, err := approve(Default(), standIn(Kubevip))
	if err != nil || a.Digest != b.Digest {
		t.Errorf("in its own process the approval is %s; in this one %s (%v)", a.Digest, b.Digest, err)
	}
	t.Logf("the kube-vip stand-in approved, both renders each in a process of its own, in %s", took.Round(time.Millisecond))

	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, tc := range []struct {
		name, template, want string
	}{
		{"a string doubled without end", doubling, "needed more than the 128 MiB of memory a render may have"},
		{"a loop of a hundred million steps", looping, "was still rendering after 5s"},
		{"a ConfigMap of 2 MiB", large, "more than the 1024 KiB a render may"},
	} {
		ch := withTemplate(Kubevip, "templates/overrun.yaml", tc.template)
		start := time.Now()
		_, err := approve(own, ch)
		took := time.Since(start)
		if reasonOf(err) != ReasonRenderRefused || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want RenderedObjectRefused saying %q", tc.name, err, tc.want)
			continue
		}
		t.Logf("%s: refused after %s: %v", tc.name, took.Round(time.Millisecond), err)
		start = time.Now()
		_, err = approve(own, ch)
		if !strings.Contains(fmt.Sprint(err), "earlier: it is not rendered again") || time.Since(start) > time.Second {
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
// budget and its chart is not rendered again; the output budget holds as well.
func TestRenderInThisProcess(t *testing.T) {
	defaults := config.Default().Kubevip.Values
	for _, tc := range []struct {
		name, template, want string
		time                 time.Duration
	}{
		{"a loop of nine million steps", `{{- range until 3000 }}{{- range until 3000 }}{{- end }}{{- end }}`, "was still rendering after 200ms", 200 * time.Millisecond},
		{"a ConfigMap of 2 MiB", large, "more than the 1024 KiB a render may", 10 * time.Second},
	} {
		p := budgeted(t, false, RenderBudget{Time: tc.time, Output: 1 << 20, Memory: 128 << 20, Parallel: 2})
		pl, err := p.NewPlan(Kubevip, "kubevipChartValues", "", defaults, defaults)
		if err != nil {
			t.Fatal(err)
		}
		ch := withTemplate(Kubevip, "templates/overrun.yaml", tc.template)
		if _, err := pl.Approve(ch, release()); reasonOf(err) != ReasonRenderRefused || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want RenderedObjectRefused saying %q", tc.name, err, tc.want)
		}
		if _, err := pl.Approve(ch, release()); !strings.Contains(fmt.Sprint(err), "earlier: it is not rendered again") {
			t.Errorf("%s again: %v; want refused without a render", tc.name, err)
		}
	}
}
