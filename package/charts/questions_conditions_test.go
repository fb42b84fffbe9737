package charts

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"
)

// flatQuestion is a question with the question whose subquestion it is.
type flatQuestion struct {
	question
	parent *flatQuestion
}

func flattenQuestions(questions []question, parent *flatQuestion) []*flatQuestion {
	var out []*flatQuestion
	for _, q := range questions {
		f := &flatQuestion{question: q, parent: parent}
		out = append(append(out, f), flattenQuestions(q.Subquestions, f)...)
	}
	return out
}

func deepCopyValues(values map[string]interface{}) map[string]interface{} {
	data, _ := json.Marshal(values)
	out := map[string]interface{}{}
	_ = json.Unmarshal(data, &out)
	return out
}

// setValue is set(obj, path, value) of shell/utils/object.js for plain dotted paths.
func setValue(values map[string]interface{}, path string, v interface{}) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := values[p].(map[string]interface{})
		if !ok {
			next = map[string]interface{}{}
			values[p] = next
		}
		values = next
	}
	values[parts[len(parts)-1]] = v
}

// identifiers collects the dotted paths and string literals of a compiled expression.
func identifiers(n *jexlNode, paths, literals map[string]bool) {
	if n == nil {
		return
	}
	if n.op == "identifier" {
		var parts []string
		for cur := n; cur != nil; cur = cur.from {
			if cur.op != "identifier" {
				identifiers(cur, paths, literals)
				return
			}
			parts = append([]string{cur.name}, parts...)
		}
		paths[strings.Join(parts, ".")] = true
		return
	}
	if s, ok := n.value.(string); ok && n.op == "literal" {
		literals[s] = true
	}
	identifiers(n.left, paths, literals)
	identifiers(n.right, paths, literals)
}

// conditionInputs: the variables that decide whether q is shown (its own condition, its parent's
// subquestion condition and, recursively, what decides whether the parent is shown).
func conditionInputs(q *flatQuestion, paths, literals map[string]bool) error {
	type condition struct{ source, expr string }
	var conds []condition
	switch {
	case q.If != nil:
		conds = append(conds, condition{"if " + *q.If, *q.If})
	case q.ShowIf != nil:
		expr, err := dashboardMigrate(*q.ShowIf)
		if err != nil {
			return fmt.Errorf("show_if %q: %w", *q.ShowIf, err)
		}
		conds = append(conds, condition{fmt.Sprintf("show_if %q", *q.ShowIf), expr})
	}
	if p := q.parent; p != nil {
		paths[p.Variable] = true
		for _, e := range []*string{p.SubquestionsIf, p.SubquestionIf} {
			if e != nil {
				conds = append(conds, condition{p.Variable + "'s subquestion condition", *e})
			}
		}
		if err := conditionInputs(p, paths, literals); err != nil {
			return err
		}
	}
	for _, c := range conds {
		n, err := jexlCompile(c.expr)
		if err != nil {
			return fmt.Errorf("%s (Jexl %q): %w", c.source, c.expr, err)
		}
		identifiers(n, paths, literals)
	}
	return nil
}

// domain: the values of a question to try: both booleans, every option, or the default and others.
func domain(q question, def interface{}, literals map[string]bool) []interface{} {
	switch q.Type {
	case "boolean":
		return []interface{}{true, false}
	case "enum":
		out := []interface{}{}
		for _, o := range q.Options {
			out = append(out, o)
		}
		return out
	case "int":
		f, _ := def.(float64)
		return []interface{}{f, f + 1, float64(0)}
	}
	out := []interface{}{def, "", "example"}
	for l := range literals {
		out = append(out, l)
	}
	return out
}

// conditionProblems evaluates every condition of a form as the released dashboards do and
// returns what is wrong: a condition that fails to parse or evaluate (the dashboard then shows the
// question whatever the values), one naming a variable no question asks, a question that is shown
// for every value of the variables deciding it or for none, and subquestions of a boolean that do
// not follow its show_subquestion_if.
func conditionProblems(questions []question, values map[string]interface{}) []string {
	var problems []string
	show := func(assign map[string]interface{}) ([]string, error) {
		v := deepCopyValues(values)
		for path, val := range assign {
			setValue(v, path, val)
		}
		return dashboardForm{questions: questions, values: v}.shown()
	}
	defaults, err := show(nil)
	if err != nil {
		problems = append(problems, fmt.Sprintf("with the chart's values: %v", err))
	}
	all := flattenQuestions(questions, nil)
	byVariable := map[string]*flatQuestion{}
	for _, q := range all {
		byVariable[q.Variable] = q
	}
	for _, q := range all {
		paths, literals := map[string]bool{}, map[string]bool{}
		if err := conditionInputs(q, paths, literals); err != nil {
			if errors.Is(err, errJexl) {
				problems = append(problems, fmt.Sprintf("%s: %v; released dashboards show it whatever the values", q.Variable, err))
			} else {
				problems = append(problems, fmt.Sprintf("%s: %v", q.Variable, err))
			}
			continue
		}
		if len(paths) == 0 {
			continue
		}
		assignments := []map[string]interface{}{{}}
		var names []string
		unknown := false
		for path := range paths {
			input, ok := byVariable[path]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: its condition refers to %q, which is not a question", q.Variable, path))
				unknown = true
				continue
			}
			names = append(names, path)
			var next []map[string]interface{}
			for _, a := range assignments {
				for _, v := range domain(input.question, valueAt(values, path), literals) {
					c := map[string]interface{}{path: v}
					for k, old := range a {
						c[k] = old
					}
					next = append(next, c)
				}
			}
			assignments = next
		}
		if unknown {
			continue
		}
		shownFor, hiddenFor := 0, 0
		for _, a := range assignments {
			shown, _ := show(a) // errors of the chart's conditions are reported above
			if slices.Contains(shown, q.Variable) {
				shownFor++
			} else {
				hiddenFor++
			}
		}
		slices.Sort(names)
		switch {
		case hiddenFor == 0:
			problems = append(problems, fmt.Sprintf("%s is shown whatever the values of %v", q.Variable, names))
		case shownFor == 0:
			problems = append(problems, fmt.Sprintf("%s is hidden whatever the values of %v", q.Variable, names))
		}
	}

	// A boolean with show_subquestion_if shows its subquestions exactly when it has that value.
	for _, q := range all {
		want, isBool := q.ShowSubquestionIf.(bool)
		if q.Type != "boolean" || len(q.Subquestions) == 0 || !isBool || q.SubquestionIf != nil || q.SubquestionsIf != nil {
			continue
		}
		if !slices.Contains(defaults, q.Variable) {
			continue // hidden itself by the chart's values; the checks above cover its condition
		}
		for _, v := range []bool{true, false} {
			shown, _ := show(map[string]interface{}{q.Variable: v})
			for _, sub := range q.Subquestions {
				if got := slices.Contains(shown, sub.Variable); got != (v == want) {
					problems = append(problems, fmt.Sprintf("%s=%v: subquestion %s shown %v; want %v", q.Variable, v, sub.Variable, got, v == want))
				}
			}
		}
	}
	return problems
}

// TestQuestionConditions runs the dashboard's show_if/show_subquestion_if logic (v2.8.0 to v2.15.0)
// over questions.yaml: every condition parses and evaluates, depends on the variables it names,
// and reveals what it is meant to: each OCI reference exactly when "Install from an OCI registry"
// is on, and the Helm repository field and each chart version (which pins the repository's chart
// as well as an OCI one) always.
func TestQuestionConditions(t *testing.T) {
	questions, values := loadQuestions(t)
	for _, p := range conditionProblems(questions, values) {
		t.Error(p)
	}
	for _, chart := range []string{"kubevip", "kubevipCloudProvider"} {
		for _, on := range []bool{true, false} {
			v := deepCopyValues(values)
			setValue(v, "ociCharts."+chart, on)
			shown, err := dashboardForm{questions: questions, values: v}.shown()
			if err != nil {
				t.Error(err)
			}
			if !slices.Contains(shown, "ociCharts."+chart) || !slices.Contains(shown, "config.kubevipChartRepoUrl") {
				t.Errorf("ociCharts.%s=%v: the switch or the Helm repository is hidden", chart, on)
			}
			if field, got := "config."+chart+"ChartRef", slices.Contains(shown, "config."+chart+"ChartRef"); got != on {
				t.Errorf("ociCharts.%s=%v: %s shown %v; want %v", chart, on, field, got, on)
			}
			if field := "config." + chart + "ChartVersion"; !slices.Contains(shown, field) {
				t.Errorf("ociCharts.%s=%v: %s hidden; want it shown whatever the source", chart, on, field)
			}
		}
	}
}

// TestQuestionConditionsCatchBrokenForms: the checker finds what released dashboards get wrong:
// the former "config.kubevipChartRef!=" (the key becomes "config.kubevipChartRef!", Jexl
// refuses it, and the version shows always), "!=" with a value, a condition on a variable no
// question asks, one that can never be true and one that is always true.
func TestQuestionConditionsCatchBrokenForms(t *testing.T) {
	const form = `
- {variable: config.kubevipChartRef, label: R, type: string}
- {variable: config.kubevipChartVersion, label: V, type: string, show_if: "config.kubevipChartRef!="}
- {variable: config.logLevel, label: L, type: enum, options: [Info, Debug]}
- {variable: config.traceIpamData, label: T, type: boolean, show_if: "config.logLevel!=Info"}
- {variable: config.metricsPort, label: M, type: int, show_if: "config.metricsport=8080"}
- {variable: config.kubevipUpdate, label: U, type: boolean, show_if: "config.logLevel=Info&&config.logLevel=Debug"}
- {variable: config.kubevipNamespace, label: N, type: string, show_if: "config.logLevel=Info||config.logLevel=Debug"}
`
	var questions []question
	if err := yaml.UnmarshalStrict([]byte(form), &questions); err != nil {
		t.Fatal(err)
	}
	values := map[string]interface{}{"config": map[string]interface{}{
		"kubevipChartRef": "", "kubevipChartVersion": "", "logLevel": "Info", "traceIpamData": false, "metricsPort": float64(8080), "kubevipUpdate": false,
		"kubevipNamespace": "kube-system",
	}}
	problems := strings.Join(conditionProblems(questions, values), "\n")
	for _, want := range []string{
		`config.kubevipChartVersion: show_if "config.kubevipChartRef!=" (Jexl "!config.kubevipChartRef!"): jexl error: token ! unexpected`,
		`config.traceIpamData: show_if "config.logLevel!=Info" (Jexl "config.logLevel! == \"Info\""): jexl error`,
		`config.metricsPort: its condition refers to "config.metricsport"`,
		"config.kubevipUpdate is hidden whatever the values of [config.logLevel]",
		"config.kubevipNamespace is shown whatever the values of [config.logLevel]",
	} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems lack %q:\n%s", want, problems)
		}
	}
}

// TestDashboardConditionModel pins the mirrored dashboard logic to what its source does.
func TestDashboardConditionModel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a=", "!a"},
		{"a!=", "!a!"}, // the greedy key keeps the "!"; the empty value asks for a falsy key
		{"a!=x", `a! == "x"`},
		{"a=true", "a == true"},
		{"a.b=x", `a.b == "x"`},
		{"a=x&&b=", `a == "x" && !b`},
		{"a=x||b=null", `a == "x" || b == null`},
	} {
		if got, _ := dashboardMigrate(tc.in); got != tc.want {
			t.Errorf("migrate(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}

	values := map[string]interface{}{
		"a": map[string]interface{}{"b": "x", "n": float64(1), "t": true, "empty": ""},
		"x": "null", "y": "a-b",
	}
	for _, tc := range []struct {
		expr    string
		want    bool
		jexlErr bool
	}{
		{"!!a.b", true, false},
		{"!a.missing", true, false},
		{"!a.missing.deeper", true, false},
		{`a.b == "x"`, true, false},
		{`a.n == "1"`, true, false},     // loose equality: "1" becomes 1
		{`a.t == "true"`, false, false}, // true becomes 1, "true" NaN
		{"a.t == true && !a.empty", true, false},
		{`a.b == "y" || a.n == 1`, true, false},
		{"!a.b!", true, true}, // Jexl refuses the trailing "!"; the dashboard shows the question
		{"a = b", true, true}, // "=" is no Jexl token
		{"!a.b == false", true, false},
		{"(a.t)", true, false},
	} {
		f := dashboardForm{values: values}
		out, err := f.evalExpr(tc.expr, question{})
		if errors.Is(err, errUnmodelled) || (err != nil) != tc.jexlErr || (tc.jexlErr && !errors.Is(err, errJexl)) {
			t.Errorf("%s: error %v; want a Jexl error %v", tc.expr, err, tc.jexlErr)
		}
		if jsTruthy(out) != tc.want {
			t.Errorf("%s = %v; want %v", tc.expr, out, tc.want)
		}
	}
	if _, err := jexlCompile("a + 1"); !errors.Is(err, errUnmodelled) {
		t.Errorf("a + 1: %v; want it reported as outside the model", err)
	}

	// Jexl finds x == null false ("null" is an undefined identifier), and the "-" sends the
	// dashboard to the former UI's string comparison, which shows the question.
	showIf := "x=null&&y=a-b"
	questions := []question{{Variable: "x"}, {Variable: "y"}, {Variable: "z", ShowIf: &showIf}}
	shown, err := dashboardForm{questions: questions, values: values}.shown()
	if err != nil || !slices.Contains(shown, "z") {
		t.Errorf("the former UI's fallback: shown %v, error %v; want z shown", shown, err)
	}

	// show_subquestion_if: true and "true" ask for a truthy answer, false for a falsy one, another
	// value for equality.
	sub := []question{{Variable: "s"}}
	for _, tc := range []struct {
		cond  interface{}
		value interface{}
		want  bool
	}{
		{true, true, true}, {true, false, false}, {"true", "x", true}, {false, false, true}, {false, true, false},
		{"fast", "fast", true}, {"fast", "slow", false}, {float64(3), float64(3), true},
	} {
		q := question{Variable: "p", ShowSubquestionIf: tc.cond, Subquestions: sub}
		shown, err := dashboardForm{questions: []question{q}, values: map[string]interface{}{"p": tc.value}}.shown()
		if err != nil || slices.Contains(shown, "s") != tc.want {
			t.Errorf("show_subquestion_if %v with %v: shown %v (error %v); want s shown %v", tc.cond, tc.value, shown, err, tc.want)
		}
	}
}

// TestQuestionsModelCoversRancherVersions: the condition checks mirror the dashboards of Rancher
// v2.8.0 to v2.15.0; a chart admitting an older Rancher needs that dashboard checked first.
func TestQuestionsModelCoversRancherVersions(t *testing.T) {
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	constraint, err := semver.NewConstraint(c.Metadata.Annotations["catalog.cattle.io/rancher-version"])
	if err != nil {
		t.Fatalf("catalog.cattle.io/rancher-version: %v", err)
	}
	for _, v := range []string{"2.7.99", "2.7.0", "2.6.14"} {
		if constraint.Check(semver.MustParse(v)) {
			t.Errorf("catalog.cattle.io/rancher-version admits Rancher %s, older than the dashboards the question checks mirror", v)
		}
	}
	if !constraint.Check(semver.MustParse("2.8.0")) {
		t.Errorf("catalog.cattle.io/rancher-version does not admit Rancher 2.8.0")
	}
}
