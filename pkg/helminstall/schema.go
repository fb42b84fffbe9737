package helminstall

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// Bounds on a chart's values.schema.json. Helm's own validation follows $ref to files and URLs
// and walks the schema recursively; a chart from an allowed source is still not trusted to point
// the operator at /dev/zero, at the pod's service-account token, or at an internal URL, nor to
// nest without end.
const (
	maxSchemaBytes = 1 << 20
	maxSchemaDepth = 64
	maxSchemaRefs  = 1000
	// maxSchemaNodes bounds the objects and booleans, each a possible subschema, handed to the
	// compiler: it looks every subschema up in a list of those queued, so its time grows with the
	// square of their number (10,000 take about half a second, 20,000 two, 80,000 more than a
	// minute). A chart's schema rarely has a thousand.
	maxSchemaNodes = 10000
	// maxSchemaSteps bounds the schema with every reference expanded where it is used, which is
	// what validation walks. A few hundred bytes of allOf, anyOf or oneOf listing the same $ref
	// twice, nested twenty deep, expand to millions of subschemas: validation time doubles with
	// each level. A real chart's schema expands to a few thousand.
	maxSchemaSteps = 100000
	// maxValidationSteps bounds the subschemas applied to the values themselves. A reference
	// that recurses (a tree type) is applied once per level of the values, and a recursion that
	// applies itself twice per level doubles with the depth of the values, which the chart's own
	// values.yaml decides. Validation takes about a microsecond a step.
	maxValidationSteps = 1000000
	// schemaValidationTimeout caps the validation of one release's values, whatever deadline the
	// caller's context carries.
	schemaValidationTimeout = 10 * time.Second
)

// validateValues checks the values a release is installed with against the schemas of the chart
// and of its subcharts, as Helm does, but with references confined to the schema itself. The
// install and upgrade then skip Helm's own schema validation. It stops when ctx ends or after
// schemaValidationTimeout.
func validateValues(ctx context.Context, ch *chart.Chart, values map[string]interface{}) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("validating the values failed: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, schemaValidationTimeout)
	defer cancel()
	vals, err := chartutil.CoalesceValues(ch, values)
	if err != nil {
		return fmt.Errorf("the values do not merge with the chart's: %w", err)
	}
	return validateTree(ctx, ch, vals)
}

func validateTree(ctx context.Context, ch *chart.Chart, vals map[string]interface{}) error {
	if len(ch.Schema) > 0 {
		if err := validateSchema(ctx, ch.Name(), ch.Schema, vals); err != nil {
			return err
		}
	}
	for _, sub := range ch.Dependencies() {
		raw, ok := vals[sub.Name()]
		if !ok || raw == nil {
			continue
		}
		subVals, ok := raw.(map[string]interface{})
		if !ok {
			return fmt.Errorf("the values of subchart %s are a %T, not a map", sub.Name(), raw)
		}
		if err := validateTree(ctx, sub, subVals); err != nil {
			return err
		}
	}
	return nil
}

// schemaBase is where a chart's schema is placed for the compiler; any reference that leaves it
// reaches refuseLoader.
const schemaBase = "file:///values.schema.json"

// validateSchema refuses, before validating anything, a schema whose validation work could
// exceed the bounds above; only then does the library, which cannot be interrupted, run, and the
// wait for it ends with ctx.
func validateSchema(ctx context.Context, name string, raw []byte, vals map[string]interface{}) error {
	schema, err := compileSchema(name, raw)
	if err != nil {
		return err
	}
	// The bounds walk the compiled schema rather than the JSON, so that every reference leads
	// where the validator's does ($id changing the base, anchors, escaped pointers, the siblings
	// draft-07 ignores next to $ref); compiling is fast once the nodes are bounded.
	if err := boundExpansion(schema); err != nil {
		return fmt.Errorf("the values.schema.json of chart %s is refused: %w", name, err)
	}
	if err := boundValidation(schema, vals); err != nil {
		return fmt.Errorf("the values.schema.json of chart %s is refused: %w", name, err)
	}
	return runValidation(ctx, name, schema, vals)
}

// compileSchema compiles a chart's schema once its size, nesting, references and nodes are
// within bounds.
func compileSchema(name string, raw []byte) (*jsonschema.Schema, error) {
	if len(raw) > maxSchemaBytes {
		return nil, fmt.Errorf("the values.schema.json of chart %s is larger than %d bytes", name, maxSchemaBytes)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the values.schema.json of chart %s is refused: it is not valid JSON (%s)", name, redact.Shorten(err.Error(), 200))
	}
	var counts schemaCounts
	if err := checkSchemaNode(doc, 0, &counts); err != nil {
		return nil, fmt.Errorf("the values.schema.json of chart %s is refused: %w", name, err)
	}
	compiler := jsonschema.NewCompiler()
	compiler.UseLoader(refuseLoader{})
	if err := compiler.AddResource(schemaBase, doc); err != nil {
		return nil, fmt.Errorf("the values.schema.json of chart %s is refused: %w", name, err)
	}
	schema, err := compiler.Compile(schemaBase)
	if err != nil {
		return nil, fmt.Errorf("the values.schema.json of chart %s does not compile: %w", name, err)
	}
	return schema, nil
}

// runValidation waits for the library's Validate, which takes no context, until ctx ends. The
// bounds checked before mean a validation left behind finishes on its own soon after.
func runValidation(ctx context.Context, name string, schema *jsonschema.Schema, vals map[string]interface{}) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("validating the values against the values.schema.json of chart %s stopped at the deadline: %w", name, err)
	}
	type outcome struct {
		err   error
		panic interface{}
	}
	done := make(chan outcome, 1)
	go func() {
		// The panic would otherwise escape validateValues' recover, which runs on another
		// goroutine, and end the operator.
		defer func() {
			if r := recover(); r != nil {
				done <- outcome{panic: r}
			}
		}()
		done <- outcome{err: schema.Validate(vals)}
	}()
	select {
	case o := <-done:
		if o.panic != nil {
			return fmt.Errorf("validating the values against the values.schema.json of chart %s failed: %v", name, o.panic)
		}
		if o.err != nil {
			return fmt.Errorf("the values do not match the values.schema.json of chart %s: %w", name, o.err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("validating the values against the values.schema.json of chart %s stopped at the deadline: %w", name, ctx.Err())
	}
}

// schemaCounts accumulates over the JSON of a schema what checkSchemaNode bounds.
type schemaCounts struct {
	refs  int
	nodes int
}

// checkSchemaNode refuses nesting deeper than maxSchemaDepth, more than maxSchemaRefs references,
// more than maxSchemaNodes possible subschemas, and any reference that leaves the document.
func checkSchemaNode(node interface{}, depth int, counts *schemaCounts) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("it nests deeper than %d levels", maxSchemaDepth)
	}
	switch node.(type) {
	case map[string]interface{}, bool:
		counts.nodes++
		if counts.nodes > maxSchemaNodes {
			return fmt.Errorf("it has more than %d objects and booleans", maxSchemaNodes)
		}
	}
	switch n := node.(type) {
	case map[string]interface{}:
		for k, v := range n {
			switch k {
			case "$ref", "$dynamicRef", "$recursiveRef":
				counts.refs++
				if counts.refs > maxSchemaRefs {
					return fmt.Errorf("it has more than %d references", maxSchemaRefs)
				}
				if s, ok := v.(string); ok && !strings.HasPrefix(s, "#") {
					return fmt.Errorf("%s %q points outside the schema", k, redact.Shorten(s, 80))
				}
			}
			if err := checkSchemaNode(v, depth+1, counts); err != nil {
				return err
			}
		}
	case []interface{}:
		for _, v := range n {
			if err := checkSchemaNode(v, depth+1, counts); err != nil {
				return err
			}
		}
	}
	return nil
}

// boundExpansion refuses a schema that expands, every reference followed where it is used, to
// more than maxSchemaSteps subschemas. A reference to a schema already being expanded is
// recursion, which only the values can drive on (boundValidation bounds that), so it counts once
// and is not followed again. The count does not depend on the values, nor on map order.
func boundExpansion(root *jsonschema.Schema) error {
	e := expansion{expanding: map[*jsonschema.Schema]bool{}}
	return e.visit(root)
}

type expansion struct {
	steps     int
	expanding map[*jsonschema.Schema]bool
}

func (e *expansion) visit(s *jsonschema.Schema) error {
	if s == nil {
		return nil
	}
	e.steps++
	if e.steps > maxSchemaSteps {
		return fmt.Errorf("validating it could take more than %d steps (allOf/anyOf/oneOf over $ref multiply)", maxSchemaSteps)
	}
	if s.Bool != nil || e.expanding[s] {
		return nil
	}
	if err := dynamicResolution(s); err != nil {
		return err
	}
	e.expanding[s] = true
	defer delete(e.expanding, s)
	if err := eachSameValueSchema(s, e.visit); err != nil {
		return err
	}
	return eachChildValueSchema(s, e.visit)
}

// dynamicResolution refuses the references that resolve through the dynamic scope ($recursiveRef
// to a $recursiveAnchor, $dynamicRef to a matching $dynamicAnchor): where they lead depends on
// the path validation took, which the compiled schema does not tell, so no bound could follow
// them. Without the anchor they are plain references, and are followed.
func dynamicResolution(s *jsonschema.Schema) error {
	if s.RecursiveRef != nil && s.RecursiveRef.RecursiveAnchor {
		return fmt.Errorf("its $recursiveRef at %s resolves dynamically, which is not supported", redact.Shorten(s.Location, 120))
	}
	if d := s.DynamicRef; d != nil && d.Anchor != "" && d.Ref != nil && d.Ref.DynamicAnchor == d.Anchor {
		return fmt.Errorf("its $dynamicRef at %s resolves dynamically, which is not supported", redact.Shorten(s.Location, 120))
	}
	return nil
}

// eachSameValueSchema calls fn with each subschema the validator applies to the very value s is
// applied to.
func eachSameValueSchema(s *jsonschema.Schema, fn func(*jsonschema.Schema) error) error {
	for _, sub := range [...]*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else} {
		if err := fn(sub); err != nil {
			return err
		}
	}
	if s.DynamicRef != nil {
		if err := fn(s.DynamicRef.Ref); err != nil {
			return err
		}
	}
	for _, list := range [...][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
		for _, sub := range list {
			if err := fn(sub); err != nil {
				return err
			}
		}
	}
	for _, dep := range s.Dependencies {
		if sub, ok := dep.(*jsonschema.Schema); ok {
			if err := fn(sub); err != nil {
				return err
			}
		}
	}
	for _, sub := range s.DependentSchemas {
		if err := fn(sub); err != nil {
			return err
		}
	}
	return nil
}

// eachChildValueSchema calls fn with each subschema the validator applies to the properties,
// property names or items of the value s is applied to.
func eachChildValueSchema(s *jsonschema.Schema, fn func(*jsonschema.Schema) error) error {
	for _, sub := range [...]*jsonschema.Schema{s.PropertyNames, s.Contains, s.Items2020, s.UnevaluatedProperties, s.UnevaluatedItems} {
		if err := fn(sub); err != nil {
			return err
		}
	}
	for _, sub := range s.Properties {
		if err := fn(sub); err != nil {
			return err
		}
	}
	for _, sub := range s.PatternProperties {
		if err := fn(sub); err != nil {
			return err
		}
	}
	for _, sub := range s.PrefixItems {
		if err := fn(sub); err != nil {
			return err
		}
	}
	if items, ok := s.Items.([]*jsonschema.Schema); ok {
		for _, sub := range items {
			if err := fn(sub); err != nil {
				return err
			}
		}
	}
	for _, v := range [...]any{s.AdditionalProperties, s.Items, s.AdditionalItems} {
		if sub, ok := v.(*jsonschema.Schema); ok {
			if err := fn(sub); err != nil {
				return err
			}
		}
	}
	return nil
}

// boundValidation refuses values whose validation against root would apply more than
// maxValidationSteps subschemas. It applies them as the validator does, value by value, but
// takes every branch the validator might take (both of if's, all of anyOf, each applicator for
// every property or item), so it counts at least the validator's work. A schema applied again
// to the same value along one path is a cycle the validator reports rather than follows.
func boundValidation(root *jsonschema.Schema, vals map[string]interface{}) error {
	var w validationWork
	return w.visit(root, vals, nil)
}

type validationWork struct {
	steps int
}

func (w *validationWork) add(n int) error {
	w.steps += n
	if w.steps > maxValidationSteps {
		return fmt.Errorf("validating the values against it could take more than %d steps (a $ref that recurses more than once per level of the values multiplies)", maxValidationSteps)
	}
	return nil
}

// visit applies s to v; onValue holds the schemas already applied to v along this path.
func (w *validationWork) visit(s *jsonschema.Schema, v interface{}, onValue []*jsonschema.Schema) error {
	if s == nil {
		return nil
	}
	cost := 1
	if s.Enum != nil {
		cost += len(s.Enum.Values)
	}
	if err := w.add(cost); err != nil {
		return err
	}
	if s.Bool != nil {
		return nil
	}
	for _, seen := range onValue {
		if seen == s {
			return nil
		}
	}
	onValue = append(onValue, s)
	if err := eachSameValueSchema(s, func(sub *jsonschema.Schema) error { return w.visit(sub, v, onValue) }); err != nil {
		return err
	}
	switch v := v.(type) {
	case map[string]interface{}:
		return w.visitProperties(s, v)
	case []interface{}:
		return w.visitItems(s, v)
	}
	return nil
}

func (w *validationWork) visitProperties(s *jsonschema.Schema, obj map[string]interface{}) error {
	for k, pv := range obj {
		if err := w.add(len(s.PatternProperties)); err != nil {
			return err
		}
		matched := false
		if sub, ok := s.Properties[k]; ok {
			matched = true
			if err := w.visit(sub, pv, nil); err != nil {
				return err
			}
		}
		for re, sub := range s.PatternProperties {
			if re.MatchString(k) {
				matched = true
				if err := w.visit(sub, pv, nil); err != nil {
					return err
				}
			}
		}
		if sub, ok := s.AdditionalProperties.(*jsonschema.Schema); ok && !matched {
			if err := w.visit(sub, pv, nil); err != nil {
				return err
			}
		}
		if err := w.visit(s.UnevaluatedProperties, pv, nil); err != nil {
			return err
		}
		if err := w.visit(s.PropertyNames, k, nil); err != nil {
			return err
		}
	}
	return nil
}

func (w *validationWork) visitItems(s *jsonschema.Schema, arr []interface{}) error {
	tuple, _ := s.Items.([]*jsonschema.Schema)
	for i, item := range arr {
		subs := [...]*jsonschema.Schema{s.Items2020, s.Contains, s.UnevaluatedItems, nil, nil, nil, nil}
		if sub, ok := s.Items.(*jsonschema.Schema); ok {
			subs[3] = sub
		}
		if i < len(tuple) {
			subs[4] = tuple[i]
		}
		if sub, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
			subs[5] = sub
		}
		if i < len(s.PrefixItems) {
			subs[6] = s.PrefixItems[i]
		}
		for _, sub := range subs {
			if err := w.visit(sub, item, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// refuseLoader loads nothing: a schema may use only itself and the meta-schemas the compiler
// carries.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, errors.New("references outside values.schema.json are not followed")
}
