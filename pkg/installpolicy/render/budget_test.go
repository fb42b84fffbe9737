package render

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// renderChildArg makes this test binary the render process, as the operator's render-chart
// command makes the operator's.
const renderChildArg = "render-chart"

func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == renderChildArg {
		if err := Serve(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// doubling is a template that doubles a string until it takes gigabytes.
const doubling = `{{- $s := "0123456789abcdef" }}{{- range until 40 }}{{- $s = print $s $s }}{{- end }}{{ $s }}`

// TestRenderThatOverranIsTriedAgain: a render that overran is refused for its values until its
// back-off ends, not for good: the same chart renders at once with other values, renders again
// with the same values once the back-off is over, and a second overrun in a row doubles the
// back-off.
func TestRenderThatOverranIsTriedAgain(t *testing.T) {
	r := New([]string{os.Args[0], renderChildArg}, Budget{Time: time.Minute, Output: 1 << 20, Memory: 64 << 20, Parallel: 1, Retry: time.Minute})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }
	// A template that overruns only when its values ask for it: as values in kube-fip-config can.
	ch := &helmchart.Chart{Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "kube-vip", Version: "0.9.9"},
		Templates: []*helmchart.File{{Name: "templates/overrun.yaml", Data: []byte(`{{- if .Values.overrun }}` + doubling + `{{- end }}`)}}}
	try := func(overrun bool) error {
		_, err := r.Render(guestchart.Kubevip, ch, map[string]interface{}{"overrun": overrun}, Target{Name: "kube-vip", Namespace: "kube-system", Revision: 1}, "sha256:test")
		return err
	}
	if err := try(true); !strings.Contains(fmt.Sprint(err), "needed more than the 64 MiB") {
		t.Fatalf("first render: %v; want it to overrun the memory budget", err)
	}
	if err := try(true); !strings.Contains(fmt.Sprint(err), "earlier: with these values it is rendered again after 2026-01-01T00:01:00Z") {
		t.Errorf("the same values at once: %v; want refused until the back-off ends", err)
	}
	if err := try(false); err != nil {
		t.Errorf("other values: %v; want the chart rendered", err)
	}
	now = now.Add(time.Minute)
	if err := try(true); !strings.Contains(fmt.Sprint(err), "needed more than the 64 MiB") || !strings.Contains(err.Error(), "rendered again after 2026-01-01T00:03:00Z") {
		t.Errorf("the same values after the back-off: %v; want rendered again, overrunning, and refused for twice as long", err)
	}
}
