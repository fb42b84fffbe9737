package charts

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// question is one entry of questions.yaml, the form Rancher's Apps & Marketplace shows.
type question struct {
	Variable          string      `json:"variable"`
	Label             string      `json:"label"`
	Description       string      `json:"description"`
	Type              string      `json:"type"`
	Options           []string    `json:"options"`
	Default           interface{} `json:"default"`
	Required          bool        `json:"required"`
	Min               *int        `json:"min"`
	Max               *int        `json:"max"`
	Group             string      `json:"group"`
	ShowIf            string      `json:"show_if"`
	ShowSubquestionIf interface{} `json:"show_subquestion_if"`
	Subquestions      []question  `json:"subquestions"`
}

// TestQuestions checks questions.yaml against values.yaml: every variable exists with a value of
// the question's type and the same default, the groups are the six of the form, the chart values
// are multiline, and each OCI chart version shows only when its reference is set.
func TestQuestions(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir(OperatorChart), "questions.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var form struct {
		Questions []question `json:"questions"`
	}
	if err := yaml.UnmarshalStrict(data, &form); err != nil {
		t.Fatalf("questions.yaml: %v", err)
	}
	values, err := chartutil.ReadValuesFile(filepath.Join(chartDir(OperatorChart), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	groups := map[string]int{}
	byVariable := map[string]question{}
	var check func(q question, group string)
	check = func(q question, group string) {
		if q.Group != "" {
			group = q.Group
		}
		groups[group]++
		if _, dup := byVariable[q.Variable]; dup {
			t.Errorf("%s asked twice", q.Variable)
		}
		byVariable[q.Variable] = q
		v, err := values.PathValue(q.Variable)
		if err != nil {
			t.Errorf("%s: not in values.yaml", q.Variable)
		} else {
			checkQuestionType(t, q, v)
		}
		if q.Label == "" {
			t.Errorf("%s: no label", q.Variable)
		}
		for _, sub := range q.Subquestions {
			check(sub, group)
		}
	}
	for _, q := range form.Questions {
		check(q, "")
	}

	want := []string{"General", "Guest clusters", "Security", "kube-vip chart", "kube-vip-cloud-provider chart", "Monitoring"}
	for _, g := range want {
		if groups[g] == 0 {
			t.Errorf("no question in group %q", g)
		}
	}
	if len(groups) != len(want) {
		t.Errorf("groups %v; want exactly %v", groups, want)
	}
	for _, chart := range []string{"kubevip", "kubevipCloudProvider"} {
		if q := byVariable["config."+chart+"ChartValues"]; q.Type != "multiline" {
			t.Errorf("config.%sChartValues: type %q; want multiline", chart, q.Type)
		}
		ref, version := "config."+chart+"ChartRef", byVariable["config."+chart+"ChartVersion"]
		if version.ShowIf != ref+"!=" {
			t.Errorf("config.%sChartVersion: show_if %q; want %q (shown when the reference is set)", chart, version.ShowIf, ref+"!=")
		}
	}
	for _, q := range byVariable {
		for _, cond := range strings.FieldsFunc(q.ShowIf, func(r rune) bool { return r == '&' || r == '|' }) {
			name := strings.TrimSpace(strings.SplitN(strings.Replace(cond, "!=", "=", 1), "=", 2)[0])
			if _, ok := byVariable[name]; !ok {
				t.Errorf("%s: show_if refers to %q, which is not a question", q.Variable, name)
			}
		}
	}
}

// checkQuestionType: the form's type fits the value in values.yaml, an enum offers it, and a
// default, when given, is the value itself.
func checkQuestionType(t *testing.T, q question, v interface{}) {
	t.Helper()
	var ok bool
	switch q.Type {
	case "boolean":
		_, ok = v.(bool)
	case "int":
		f, isNum := v.(float64)
		ok = isNum && f == float64(int64(f))
	case "string", "multiline":
		_, ok = v.(string)
	case "enum":
		s, isString := v.(string)
		for _, o := range q.Options {
			ok = ok || (isString && o == s)
		}
	}
	if !ok {
		t.Errorf("%s: type %q does not fit the value %#v in values.yaml", q.Variable, q.Type, v)
	}
	if q.Default != nil && !reflect.DeepEqual(q.Default, v) {
		t.Errorf("%s: default %#v differs from values.yaml %#v", q.Variable, q.Default, v)
	}
}
