package metrics

import (
	"sort"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// TestPrefixGathererKeepsControllerSeries: of a registry like Prometheus's default one, only
// lasso's controller series and the work queue series are served beside the operator's own, and
// the Go and process collectors both registries hold are not served twice.
func TestPrefixGathererKeepsControllerSeries(t *testing.T) {
	global := prometheus.NewRegistry()
	for _, name := range []string{"lasso_controller_total_handler_execution", "workqueue_adds_total", "someone_elses_total"} {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: name})
		c.Inc()
		global.MustRegister(c)
	}
	global.MustRegister(collectors.NewGoCollector())

	m := New()
	families, err := prometheus.Gatherers{m.Registry, prefixGatherer{global, controllerSeries()}}.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	names := map[string]bool{}
	for _, mf := range families {
		names[mf.GetName()] = true
	}
	for _, want := range []string{"lasso_controller_total_handler_execution", "workqueue_adds_total", "go_goroutines"} {
		if !names[want] {
			t.Errorf("%s not served", want)
		}
	}
	if names["someone_elses_total"] {
		all := make([]string, 0, len(names))
		for n := range names {
			all = append(all, n)
		}
		sort.Strings(all)
		t.Errorf("a series of the default registry that is not lasso's is served: %v", all)
	}
}
