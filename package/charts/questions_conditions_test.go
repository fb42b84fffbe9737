package charts

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

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

// setValue sets the value at a plain dotted path, making the maps on the way.
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

// valueAt is the value at a plain dotted path, or nil.
func valueAt(values map[string]interface{}, path string) interface{} {
	var cur interface{} = values
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]interface{})
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

// portableShowIf is the show_if every dashboard the chart admits reads alike: key=value terms
// joined by &&. Released dashboards turn "a!=" into the key "a!" and show the question always,
// and newer ones alone read "||" and Jexl.
var portableShowIf = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.]*=[A-Za-z0-9.-]+(&&[A-Za-z][A-Za-z0-9.]*=[A-Za-z0-9.-]+)*$`)

// conditionProblems lists every condition of a form outside the portable subset: a show_if other
// than key=value terms joined by &&, or naming a variable no question asks; a show_subquestion_if
// other than true on a boolean; subquestions revealed any other way; the Jexl-only if and
// subquestion(s)_if.
func conditionProblems(questions []question) []string {
	flat := flattenQuestions(questions, nil)
	asked := map[string]bool{}
	for _, q := range flat {
		asked[q.Variable] = true
	}
	var out []string
	for _, q := range flat {
		if q.If != nil || q.SubquestionIf != nil || q.SubquestionsIf != nil || q.ShowSubquestionsIf != nil {
			out = append(out, q.Variable+": a condition only newer dashboards read (if, subquestion_if, subquestions_if, show_subquestions_if)")
		}
		if q.ShowIf != nil {
			if !portableShowIf.MatchString(*q.ShowIf) {
				out = append(out, fmt.Sprintf("%s: show_if %q is not key=value terms joined by &&", q.Variable, *q.ShowIf))
			}
			for _, term := range strings.Split(*q.ShowIf, "&&") {
				if key, _, _ := strings.Cut(term, "="); !asked[key] {
					out = append(out, fmt.Sprintf("%s: its condition refers to %q, which no question asks", q.Variable, key))
				}
			}
		}
		if len(q.Subquestions) > 0 && (q.Type != "boolean" || q.ShowSubquestionIf != true) {
			out = append(out, fmt.Sprintf("%s: subquestions behind show_subquestion_if %v on a %s; want true on a boolean", q.Variable, q.ShowSubquestionIf, q.Type))
		}
	}
	return out
}

// TestQuestionConditions: every condition of questions.yaml is of the portable subset, and the
// form reveals what it is meant to: each OCI reference only under its "Install from an OCI
// registry" switch, and the Helm repository field and each chart version (which pins the
// repository's chart as well as an OCI one) always.
func TestQuestionConditions(t *testing.T) {
	questions, _ := loadQuestions(t)
	for _, p := range conditionProblems(questions) {
		t.Error(p)
	}
	byVariable := map[string]*flatQuestion{}
	for _, q := range flattenQuestions(questions, nil) {
		byVariable[q.Variable] = q
	}
	always := []string{"config.kubevipChartRepoUrl"}
	for _, chart := range []string{"kubevip", "kubevipCloudProvider"} {
		always = append(always, "ociCharts."+chart, "config."+chart+"ChartVersion")
		if q := byVariable["config."+chart+"ChartRef"]; q == nil || q.parent == nil || q.parent.Variable != "ociCharts."+chart {
			t.Errorf("config.%sChartRef: not a subquestion of ociCharts.%s", chart, chart)
		}
	}
	for _, v := range always {
		if q := byVariable[v]; q == nil || q.parent != nil || q.ShowIf != nil {
			t.Errorf("%s: missing or shown only on a condition", v)
		}
	}
}

// TestQuestionConditionsCatchBrokenForms: the check finds what released dashboards get wrong: the
// former "config.kubevipChartRef!=", "!=" with a value, "||", a condition on a variable no
// question asks, and subquestions behind anything but true on a boolean.
func TestQuestionConditionsCatchBrokenForms(t *testing.T) {
	const form = `
- {variable: config.kubevipChartRef, label: R, type: string}
- {variable: config.kubevipChartVersion, label: V, type: string, show_if: "config.kubevipChartRef!="}
- {variable: config.logLevel, label: L, type: enum, options: [Info, Debug]}
- {variable: config.traceIpamData, label: T, type: boolean, show_if: "config.logLevel!=Info"}
- {variable: config.metricsPort, label: M, type: int, show_if: "config.metricsport=8080"}
- {variable: config.kubevipNamespace, label: N, type: string, show_if: "config.logLevel=Info||config.logLevel=Debug"}
- {variable: config.kubevipUpdate, label: U, type: enum, options: [a, b], show_subquestion_if: a, subquestions: [{variable: x, label: X, type: string}]}
- {variable: config.threads, label: H, type: string, show_if: "config.logLevel=Info&&config.kubevipUpdate=a"}
`
	var questions []question
	if err := yaml.UnmarshalStrict([]byte(form), &questions); err != nil {
		t.Fatal(err)
	}
	problems := strings.Join(conditionProblems(questions), "\n")
	for _, want := range []string{
		`config.kubevipChartVersion: show_if "config.kubevipChartRef!="`,
		`config.traceIpamData: show_if "config.logLevel!=Info"`,
		`config.metricsPort: its condition refers to "config.metricsport"`,
		`config.kubevipNamespace: show_if "config.logLevel=Info||config.logLevel=Debug"`,
		"config.kubevipUpdate: subquestions behind show_subquestion_if a on a enum",
	} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems lack %q:\n%s", want, problems)
		}
	}
	if strings.Contains(problems, "config.threads") {
		t.Errorf("the portable config.threads is reported:\n%s", problems)
	}
}
