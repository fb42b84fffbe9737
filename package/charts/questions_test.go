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

// question is one entry of questions.yaml, the form Rancher's Apps & Marketplace shows, with every
// field the dashboard reads to decide whether it is shown.
type question struct {
	Variable           string      `json:"variable"`
	Label              string      `json:"label"`
	Description        string      `json:"description"`
	Type               string      `json:"type"`
	Options            []string    `json:"options"`
	Default            interface{} `json:"default"`
	Required           bool        `json:"required"`
	Min                *int        `json:"min"`
	Max                *int        `json:"max"`
	Group              string      `json:"group"`
	If                 *string     `json:"if"`
	ShowIf             *string     `json:"show_if"`
	SubquestionIf      *string     `json:"subquestion_if"`
	SubquestionsIf     *string     `json:"subquestions_if"`
	ShowSubquestionIf  interface{} `json:"show_subquestion_if"`
	ShowSubquestionsIf interface{} `json:"show_subquestions_if"`
	Subquestions       []question  `json:"subquestions"`
}

// loadQuestions reads the operator chart's questions.yaml strictly, and its values.yaml.
func loadQuestions(t *testing.T) ([]question, chartutil.Values) {
	t.Helper()
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
	return form.Questions, values
}

// questionGroups are the tabs of the form, in order.
func questionGroups() []string {
	return []string{"General", "Guest clusters", "Security", "Air gap", "kube-vip chart", "kube-vip-cloud-provider chart", "Monitoring", "Uninstall", "Backups", "Advanced"}
}

// TestQuestions checks questions.yaml against values.yaml: every variable exists with a value of
// the question's type and the same default, the groups are the tabs of the form, and the chart
// values are multiline.
func TestQuestions(t *testing.T) {
	questions, values := loadQuestions(t)

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
	for _, q := range questions {
		check(q, "")
	}

	want := questionGroups()
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
	case "string", "multiline", "secret":
		// secret: the dashboard's Reference component (shell/components/Questions/index.vue maps
		// the type to it) offers the Secrets of the release namespace and answers with the name.
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

// TestQuestionsSecretAndImage: a question naming a Secret lets the administrator pick one of the
// release namespace (type secret), and the image's repository and tag are asked among the other
// deployment settings.
func TestQuestionsSecretAndImage(t *testing.T) {
	questions, _ := loadQuestions(t)
	byVariable := map[string]*flatQuestion{}
	for _, q := range flattenQuestions(questions, nil) {
		byVariable[q.Variable] = q
		if strings.HasSuffix(q.Variable, "Secret") && q.Type != "secret" {
			t.Errorf("%s names a Secret: type %q; want secret", q.Variable, q.Type)
		}
	}
	if q := byVariable["security.chartCredentialsSecret"]; q == nil || q.Type != "secret" {
		t.Errorf("security.chartCredentialsSecret: %+v; want a question of type secret", q)
	}
	for _, v := range []string{"image.repository", "image.tag"} {
		if q := byVariable[v]; q == nil || q.Type != "string" || q.Group != "General" {
			t.Errorf("%s: %+v; want a string question in General", v, q)
		}
	}
}
