// Package alerts reads the alerts of a rendered PrometheusRule and evaluates their expressions over
// the series an operator serves, with Prometheus' own parser, so that a test shows an alert's
// expression holding for what the operator really exports, without a Prometheus.
package alerts

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Expr is the expression of alert in the PrometheusRules among objs, a rendered chart; the test
// fails when none has it.
func Expr(t testing.TB, objs []*unstructured.Unstructured, alert string) string {
	t.Helper()
	for _, obj := range objs {
		if obj.GetKind() != "PrometheusRule" {
			continue
		}
		groups, _, _ := unstructured.NestedSlice(obj.Object, "spec", "groups")
		for _, g := range groups {
			group, _ := g.(map[string]interface{})
			rules, _, _ := unstructured.NestedSlice(group, "rules")
			for _, r := range rules {
				rule, _ := r.(map[string]interface{})
				if expr, ok := rule["expr"].(string); ok && rule["alert"] == alert {
					return expr
				}
			}
		}
	}
	t.Fatalf("the rendered chart has no alert %s", alert)
	return ""
}

// Holds evaluates expr over the series of metrics (the text format the operator serves) as
// Prometheus evaluates a comparison of a selector with a number, which is the shape of the alerts
// these tests evaluate: parsed by Prometheus' own parser, each gauge series the selector's matchers
// match is kept when its value compares true. It returns the series kept, sorted, each as its name
// and labels; the test fails on an expression of another shape or metrics that do not parse.
func Holds(t testing.TB, expr, metrics string) []string {
	t.Helper()
	node, err := parser.ParseExpr(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	bin, ok := node.(*parser.BinaryExpr)
	var sel *parser.VectorSelector
	var num *parser.NumberLiteral
	if ok {
		sel, _ = bin.LHS.(*parser.VectorSelector)
		num, _ = bin.RHS.(*parser.NumberLiteral)
	}
	if sel == nil || num == nil || bin.ReturnBool {
		t.Fatalf("%q is not a comparison of a selector with a number, which Holds evaluates", expr)
	}
	text := expfmt.NewTextParser(model.UTF8Validation)
	families, err := text.TextToMetricFamilies(strings.NewReader(metrics))
	if err != nil {
		t.Fatalf("the operator's metrics do not parse: %v", err)
	}
	var out []string
	for name, f := range families {
		for _, m := range f.GetMetric() {
			if m.GetGauge() == nil {
				continue
			}
			lbls := map[string]string{"__name__": name}
			for _, l := range m.GetLabel() {
				lbls[l.GetName()] = l.GetValue()
			}
			matched := true
			for _, matcher := range sel.LabelMatchers {
				matched = matched && matcher.Matches(lbls[matcher.Name])
			}
			if matched && compare(bin.Op, m.GetGauge().GetValue(), num.Val) {
				out = append(out, fmt.Sprintf("%s%v", name, lbls))
			}
		}
	}
	sort.Strings(out)
	return out
}

// compare applies a PromQL comparison operator.
func compare(op parser.ItemType, a, b float64) bool {
	switch op {
	case parser.EQLC:
		return a == b
	case parser.NEQ:
		return a != b
	case parser.GTR:
		return a > b
	case parser.LSS:
		return a < b
	case parser.GTE:
		return a >= b
	case parser.LTE:
		return a <= b
	}
	return false
}
