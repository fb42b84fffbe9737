package charts

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// This file mirrors how Rancher's dashboard decides which questions of questions.yaml it shows:
// shell/components/Questions/index.vue (migrate, evalExpr, evaluate, calExpression, isEqual,
// isNotEqual, getVariables, getAnswer, stringifyAnswer, shouldShow, shouldShowSub and the
// shownQuestions computed property) and get in shell/utils/object.js, identical in the released
// tags v2.8.0 to v2.15.0. Expressions are evaluated by the Jexl model in dashboard_jexl_test.go.
// The dashboard's catch blocks turn a broken condition into "shown"; here the same outcome is
// returned together with the error, so that a test can tell a working condition from one that
// only appears to work.

// dashboardMigrate is migrate(expr): the show_if syntax of Rancher's former UI turned into Jexl.
func dashboardMigrate(expr string) (string, error) {
	if strings.Contains(expr, "||") {
		return dashboardMigrateEach(expr, "||")
	}
	if strings.Contains(expr, "&&") {
		return dashboardMigrateEach(expr, "&&")
	}
	// The key group is greedy, so "a!=" splits into the key "a!" and "=": Go's leftmost-first
	// submatches capture what JavaScript's backtracking does for this pattern.
	if parts := regexp.MustCompile(`^(.*)(!?=)(.*)$`).FindStringSubmatch(expr); parts != nil {
		key, op, val := strings.TrimSpace(parts[1]), "==", strings.TrimSpace(parts[3])
		if strings.TrimSpace(parts[2]) == "!=" {
			op = "!="
		}
		switch {
		case val == "true" || val == "false" || val == "null":
			return key + " " + op + " " + val, nil
		case val == "" && op == "!=":
			return "!!" + key, nil
		case val == "":
			return "!" + key, nil
		}
		return key + " " + op + ` "` + val + `"`, nil
	}
	if _, err := jexlCompile(expr); err != nil {
		if errors.Is(err, errJexl) {
			return "true", fmt.Errorf("migrating %q: %w", expr, err) // the dashboard logs it and shows the question
		}
		return "", err
	}
	return expr, nil
}

func dashboardMigrateEach(expr, sep string) (string, error) {
	var out []string
	var errs []error
	for _, part := range strings.Split(expr, sep) {
		m, err := dashboardMigrate(part)
		out = append(out, m)
		errs = append(errs, err)
	}
	return strings.Join(out, " "+sep+" "), errors.Join(errs...)
}

// dashboardForm is the Questions component for one chart: its top-level questions (allQuestions)
// and the chart values being edited (value).
type dashboardForm struct {
	questions []question
	values    map[string]interface{}
}

// evalExpr: Jexl's result; when it is falsy and the expression holds a "-", the former UI's
// string comparison of show_if decides; an exception shows the question.
func (f dashboardForm) evalExpr(expr string, q question) (interface{}, error) {
	n, err := jexlCompile(expr)
	var out interface{}
	if err == nil {
		out, err = jexlEval(n, f.values)
	}
	switch {
	case errors.Is(err, errJexl):
		return true, fmt.Errorf("evaluating %q: %w", expr, err)
	case err != nil:
		return nil, fmt.Errorf("evaluating %q: %w", expr, err)
	}
	if !jsTruthy(out) && strings.Contains(expr, "-") {
		return f.evaluate(q), nil
	}
	return out, nil
}

// evaluate is the former UI's show_if logic: "||" wins over "&&", each part compared as strings.
func (f dashboardForm) evaluate(q question) bool {
	if q.ShowIf == nil || *q.ShowIf == "" {
		return true
	}
	if or := strings.Split(*q.ShowIf, "||"); len(or) > 1 {
		for _, part := range or {
			if f.calExpression(part) {
				return true
			}
		}
		return false
	}
	for _, part := range strings.Split(*q.ShowIf, "&&") {
		if !f.calExpression(part) {
			return false
		}
	}
	return true
}

func (f dashboardForm) calExpression(showIf string) bool {
	showIf = strings.TrimSpace(showIf)
	op := "="
	if strings.Contains(showIf, "!=") {
		op = "!="
	}
	parts := strings.Split(showIf, op)
	if len(parts) != 2 {
		return false
	}
	equal := stringifyAnswer(f.getAnswer(parts[0])) == stringifyAnswer(parts[1])
	return equal == (op == "=")
}

// getAnswer: the value of a top-level question of that exact variable, or else the text itself.
func (f dashboardForm) getAnswer(variable string) interface{} {
	for _, q := range f.questions {
		if q.Variable == variable {
			return valueAt(f.values, variable)
		}
	}
	return variable
}

func stringifyAnswer(v interface{}) string {
	if v == nil {
		return ""
	}
	return jsString(v)
}

// valueAt is get(obj, path) of shell/utils/object.js for plain dotted paths.
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

// shouldShow: q.if as Jexl, else show_if migrated; no condition shows the question.
func (f dashboardForm) shouldShow(q question) (bool, error) {
	var expr string
	var migrateErr error
	switch {
	case q.If != nil:
		expr = *q.If
	case q.ShowIf != nil:
		expr, migrateErr = dashboardMigrate(*q.ShowIf)
		if migrateErr != nil && !errors.Is(migrateErr, errJexl) {
			return false, migrateErr
		}
	}
	if expr == "" {
		return true, migrateErr
	}
	out, err := f.evalExpr(expr, q)
	return jsTruthy(out), errors.Join(migrateErr, err)
}

// shouldShowSub: subquestions_if/subquestion_if as Jexl, else show_subquestion(s)_if: false and
// "false" ask for a falsy answer, true and "true" for a truthy one, anything else for equality.
func (f dashboardForm) shouldShowSub(q question) (bool, error) {
	var expr string
	switch {
	case q.SubquestionsIf != nil:
		expr = *q.SubquestionsIf
	case q.SubquestionIf != nil:
		expr = *q.SubquestionIf
	}
	old := q.ShowSubquestionsIf
	if old == nil {
		old = q.ShowSubquestionIf
	}
	if expr == "" && old != nil {
		switch old {
		case false, "false":
			expr = "!" + q.Variable
		case true, "true":
			expr = "!!" + q.Variable
		default:
			expr = q.Variable + ` == "` + jsString(old) + `"`
		}
	}
	if expr == "" {
		return true, nil
	}
	out, err := f.evalExpr(expr, q)
	return jsTruthy(out), err
}

// shown lists the variables the form shows, in order: a question its condition hides is left out
// with all of its subquestions, and subquestions appear when shouldShowSub allows.
func (f dashboardForm) shown() ([]string, error) {
	var out []string
	var errs []error
	var add func(q question)
	add = func(q question) {
		show, err := f.shouldShow(q)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", q.Variable, err))
		}
		if !show {
			return
		}
		out = append(out, q.Variable)
		if len(q.Subquestions) == 0 {
			return
		}
		showSub, err := f.shouldShowSub(q)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s subquestions: %w", q.Variable, err))
		}
		if showSub {
			for _, sub := range q.Subquestions {
				add(sub)
			}
		}
	}
	for _, q := range f.questions {
		add(q)
	}
	return out, errors.Join(errs...)
}
