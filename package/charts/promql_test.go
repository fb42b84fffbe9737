package charts

import (
	"fmt"
	"sort"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kubefip/kube-fip-operator/pkg/metrics"
)

// exportedMetrics returns the names of the series the operator really exports: every collector of
// metrics.New() gets one series, and the registry is gathered. Histograms add the _bucket, _sum and
// _count series Prometheus stores; a counter keeps the name it was registered with (the operator
// serves the text format, which adds no _total).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	m := metrics.New()
	m.SetRange(metrics.RangeLabels{Name: "r", CIDR: "10.0.0.0/24", HarvesterCluster: "h", HarvesterNetwork: "n"}, 254, 1, 1, 252)
	m.AllocationConflicts.WithLabelValues("r").Inc()
	m.GuestClusterStatus.WithLabelValues("g", "h").Set(metrics.GuestClusterUp)
	m.GuestClusterEvents.WithLabelValues("g", "h", metrics.EventAPIConnection, metrics.StatusSuccess).Inc()
	m.GuestOperationDuration.WithLabelValues("h").Observe(1)
	m.DiscoveryNoRange.WithLabelValues("h").Inc()
	m.ConfigReloads.WithLabelValues(metrics.StatusSuccess).Inc()
	m.SetFloatingIP("c-m-1", "f", "g", true, metrics.ServedYes, metrics.KubevipInstalledYes)
	m.RangeWithheld.WithLabelValues("r").Set(1)
	m.RangeInUse.WithLabelValues("r").Set(0)
	m.HarvesterReads.WithLabelValues("h", "read").Inc()
	m.HarvesterRequests.WithLabelValues("h").Inc()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		name := f.GetName()
		names[name] = true
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[name+"_sum"], names[name+"_count"] = true, true
		}
	}
	// The original metric names must be among them, or the population above missed a collector.
	for _, want := range []string{"kubefipoperator_fipranges_capacity", "kubefipoperator_fipranges_reserved",
		"kubefipoperator_fipranges_available", "kubefipoperator_allocation_conflicts_total",
		"kubefipoperator_guestcluster_status", "kubefipoperator_guestcluster_events", "kubefipoperator_floatingip_ready",
		"kubefipoperator_floatingip_served", "kubefipoperator_floatingip_kubevip_installed"} {
		if !names[want] {
			t.Fatalf("the registry does not export %s", want)
		}
	}
	return names
}

// withScrapeSeries adds to the exported names the series Prometheus writes itself for every target
// it scrapes (the operator does not export them, an alert on its absence reads them).
func withScrapeSeries(exported map[string]bool) map[string]bool {
	out := map[string]bool{"up": true}
	for k, v := range exported {
		out[k] = v
	}
	return out
}

// query is one parsed PromQL expression.
type query struct {
	text    string
	expr    parser.Expr
	metrics []string // the metric names its selectors read, sorted, without repeats
}

// parseQuery parses a PromQL expression and returns what is wrong with it: a syntax error, a
// selector without a metric name, or a metric the operator does not export.
func parseQuery(text string, exported map[string]bool) (query, []error) {
	expr, err := parser.ParseExpr(text)
	if err != nil {
		return query{text: text}, []error{fmt.Errorf("PromQL %q: %w", text, err)}
	}
	var problems []error
	seen := map[string]bool{}
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == "__name__" {
				name = m.Value
			}
		}
		switch {
		case name == "":
			problems = append(problems, fmt.Errorf("PromQL %q: selector %s names no metric", text, vs))
		case !exported[name]:
			problems = append(problems, fmt.Errorf("PromQL %q: metric %s is not exported by the operator", text, name))
		default:
			seen[name] = true
		}
		return nil
	})
	q := query{text: text, expr: expr}
	for name := range seen {
		q.metrics = append(q.metrics, name)
	}
	sort.Strings(q.metrics)
	return q, problems
}

// mustParseQuery is parseQuery failing the test on any problem.
func mustParseQuery(t *testing.T, text string, exported map[string]bool) query {
	t.Helper()
	q, problems := parseQuery(text, exported)
	for _, p := range problems {
		t.Error(p)
	}
	return q
}

// calls reports whether the expression calls the PromQL function fn.
func (q query) calls(fn string) bool {
	found := false
	parser.Inspect(q.expr, func(node parser.Node, _ []parser.Node) error {
		if c, ok := node.(*parser.Call); ok && c.Func.Name == fn {
			found = true
		}
		return nil
	})
	return found
}

// threshold returns the number the expression's outermost comparison compares with.
func (q query) threshold() (parser.ItemType, float64, bool) {
	b, ok := q.expr.(*parser.BinaryExpr)
	if !ok || !b.Op.IsComparisonOperator() {
		return 0, 0, false
	}
	n, ok := b.RHS.(*parser.NumberLiteral)
	if !ok {
		return 0, 0, false
	}
	return b.Op, n.Val, true
}

// selects reports whether a selector of metric in the expression asks for label == value.
func (q query) selects(metric, label, value string) bool {
	found := false
	parser.Inspect(q.expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok || vs.Name != metric {
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == label && m.Type == labels.MatchEqual && m.Value == value {
				found = true
			}
		}
		return nil
	})
	return found
}

// reads reports whether the expression reads every one of the metrics.
func (q query) reads(names ...string) bool {
	for _, n := range names {
		i := sort.SearchStrings(q.metrics, n)
		if i == len(q.metrics) || q.metrics[i] != n {
			return false
		}
	}
	return true
}

// TestPromQLCheckRejects makes sure the checks above can fail: a misspelt metric and a syntax error
// are reported.
func TestPromQLCheckRejects(t *testing.T) {
	exported := exportedMetrics(t)
	for _, text := range []string{
		"kubefipoperator_fipranges_capacty > 0",
		"kubefipoperator_guestcluster_events_total",
		"sum by (x (kubefipoperator_fipranges_capacity)",
	} {
		if _, problems := parseQuery(text, exported); len(problems) == 0 {
			t.Errorf("%q passed the PromQL check", text)
		}
	}
}
