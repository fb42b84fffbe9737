package helminstall

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// multiplyingSchema nests levels definitions, each listing the next twice in the way body says,
// so that expanding the root reaches the last definition 2^levels times. defs names where the
// definitions live ($defs or definitions), name spells the key of definition i, and ref the
// reference to it.
type multiplyingSchema struct {
	dialect string
	defs    string
	body    func(next string) string
	name    func(i int) string
	ref     func(i int) string
}

func (m multiplyingSchema) build(levels int) string {
	name, ref := m.name, m.ref
	if name == nil {
		name = func(i int) string { return fmt.Sprintf("l%d", i) }
	}
	if ref == nil {
		ref = func(i int) string { return fmt.Sprintf("#/%s/l%d", m.defs, i) }
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"$schema":%q,"$ref":%q,%q:{`, m.dialect, ref(0), m.defs)
	for i := 0; i < levels; i++ {
		next := fmt.Sprintf(`{"$ref":%q}`, ref(i+1))
		fmt.Fprintf(&b, `%q:%s,`, name(i), m.body(next))
	}
	fmt.Fprintf(&b, `%q:{"required":["a"]}}}`, name(levels))
	return b.String()
}

const (
	draft2020 = "https://json-schema.org/draft/2020-12/schema"
	draft07   = "http://json-schema.org/draft-07/schema#"
)

func listedTwice(keyword string) func(string) string {
	return func(next string) string { return fmt.Sprintf(`{%q:[%s,%s]}`, keyword, next, next) }
}

// multiplyingSchemas are the shapes whose expansion doubles per level: the applicators that
// apply both references to the same value, and those that apply them to two properties or items.
func multiplyingSchemas() map[string]multiplyingSchema {
	return map[string]multiplyingSchema{
		"allOf":          {dialect: draft2020, defs: "$defs", body: listedTwice("allOf")},
		"anyOf":          {dialect: draft2020, defs: "$defs", body: listedTwice("anyOf")},
		"oneOf":          {dialect: draft2020, defs: "$defs", body: listedTwice("oneOf")},
		"allOf draft-07": {dialect: draft07, defs: "definitions", body: listedTwice("allOf")},
		"properties": {dialect: draft2020, defs: "$defs", body: func(next string) string {
			return fmt.Sprintf(`{"properties":{"a":%s,"b":%s}}`, next, next)
		}},
		"prefixItems": {dialect: draft2020, defs: "$defs", body: listedTwice("prefixItems")},
		"items draft-07": {dialect: draft07, defs: "definitions", body: func(next string) string {
			return fmt.Sprintf(`{"items":[%s],"additionalItems":%s}`, next, next)
		}},
		"escaped pointers": {dialect: draft2020, defs: "$defs", body: listedTwice("allOf"),
			name: func(i int) string { return fmt.Sprintf("l%d/x~y%%", i) },
			ref:  func(i int) string { return fmt.Sprintf("#/%%24defs/l%d~1x~0y%%25", i) }},
		"$dynamicRef without anchor": {dialect: draft2020, defs: "$defs", body: func(next string) string {
			next = strings.Replace(next, "$ref", "$dynamicRef", 1)
			return fmt.Sprintf(`{"allOf":[%s,%s]}`, next, next)
		}},
	}
}

const multiplyingRefusal = "validating it could take more than 100000 steps (allOf/anyOf/oneOf over $ref multiply)"

// TestValidateSchemaRefusesMultiplyingReferences: 24 levels would take the validator minutes
// (20 took 3.8 s before the bound); the schema is refused before any validation.
func TestValidateSchemaRefusesMultiplyingReferences(t *testing.T) {
	for name, m := range multiplyingSchemas() {
		t.Run(name, func(t *testing.T) {
			raw := m.build(24)
			if _, err := compileSchema("demo", []byte(raw)); err != nil {
				t.Fatalf("the schema does not even compile, so it proves nothing: %v", err)
			}
			start := time.Now()
			err := validateSchema(context.Background(), "demo", []byte(raw), map[string]interface{}{"a": "x"})
			t.Logf("%d bytes refused in %v", len(raw), time.Since(start))
			if err == nil || !strings.Contains(err.Error(), "the values.schema.json of chart demo is refused: "+multiplyingRefusal) {
				t.Errorf("= %v; want refused as multiplying", err)
			}
		})
	}
	// And so through the path an install takes.
	err := validateValues(context.Background(), schemaChart(multiplyingSchemas()["allOf"].build(24)), nil)
	if err == nil || !strings.Contains(err.Error(), "the values.schema.json of chart demo is refused: "+multiplyingRefusal) {
		t.Errorf("validateValues = %v; want refused as multiplying", err)
	}
}

// TestValidateSchemaFollowsReferencesAsTheValidatorDoes: an embedded resource's $id rebases the
// references within it, so a walk of the JSON that resolved "#/$defs/l1" from the document root
// would find the harmless definitions there and miss the multiplying ones.
func TestValidateSchemaFollowsReferencesAsTheValidatorDoes(t *testing.T) {
	t.Parallel()
	inner := multiplyingSchema{dialect: draft2020, defs: "$defs", body: listedTwice("allOf")}.build(24)
	inner = `{"$id":"urn:kubefip:inner",` + strings.TrimPrefix(inner, `{"$schema":"`+draft2020+`",`)
	var decoys strings.Builder
	for i := 0; i <= 24; i++ {
		fmt.Fprintf(&decoys, `,"l%d":{}`, i)
	}
	raw := `{"$schema":"` + draft2020 + `","$ref":"#/$defs/inner","$defs":{"inner":` + inner + decoys.String() + `}}`
	err := validateSchema(context.Background(), "demo", []byte(raw), map[string]interface{}{"a": "x"})
	if err == nil || !strings.Contains(err.Error(), multiplyingRefusal) {
		t.Errorf("= %v; want refused as multiplying", err)
	}
}

// TestValidateSchemaWithinBudget: the same shapes, 10 levels deep, expand to a few thousand steps
// and are validated as before, mismatches included.
func TestValidateSchemaWithinBudget(t *testing.T) {
	t.Parallel()
	for name, m := range multiplyingSchemas() {
		t.Run(name, func(t *testing.T) {
			raw := []byte(m.build(10))
			vals := map[string]interface{}{"a": "x"}
			if name == "properties" {
				vals = map[string]interface{}{"a": map[string]interface{}{"a": "x"}, "b": map[string]interface{}{"a": "x"}}
			}
			err := validateSchema(context.Background(), "demo", raw, vals)
			if name == "oneOf" {
				// Both alternatives are the same schema, so both match, which oneOf forbids.
				if err == nil || !strings.Contains(err.Error(), "do not match") {
					t.Errorf("= %v; want validated, and a mismatch", err)
				}
				return
			}
			if err != nil {
				t.Errorf("= %v; want valid", err)
			}
		})
	}
	raw := []byte(multiplyingSchemas()["allOf"].build(10))
	err := validateSchema(context.Background(), "demo", raw, map[string]interface{}{"b": "x"})
	if err == nil || !strings.Contains(err.Error(), "do not match") {
		t.Errorf("values missing what the innermost definition requires = %v; want a mismatch", err)
	}
}

func nestedValues(key string, depth int, leaf map[string]interface{}) map[string]interface{} {
	v := leaf
	for i := 0; i < depth; i++ {
		v = map[string]interface{}{key: v}
	}
	return v
}

// TestValidateSchemaRefusesRecursionThatMultipliesWithTheValues: a type that applies itself twice
// to each property is small to expand, but doubles its work with each level of the values, which
// a chart's own values.yaml sets.
func TestValidateSchemaRefusesRecursionThatMultipliesWithTheValues(t *testing.T) {
	raw := []byte(`{"$ref":"#/$defs/t","$defs":{"t":{"type":"object","properties":{"a":{"allOf":[{"$ref":"#/$defs/t"},{"$ref":"#/$defs/t"}]}}}}}`)
	if err := validateSchema(context.Background(), "demo", raw, nestedValues("a", 5, map[string]interface{}{})); err != nil {
		t.Errorf("5 levels of values = %v; want valid", err)
	}
	start := time.Now()
	err := validateSchema(context.Background(), "demo", raw, nestedValues("a", 40, map[string]interface{}{}))
	t.Logf("40 levels of values refused in %v", time.Since(start))
	if err == nil || !strings.Contains(err.Error(), "is refused: validating the values against it could take more than 1000000 steps") {
		t.Errorf("40 levels of values = %v; want refused", err)
	}
}

// TestValidateSchemaKeepsLegitimateRecursion: a tree type that refers to itself is followed once
// per level of the values, however deep, and still finds a bad value at the bottom.
func TestValidateSchemaKeepsLegitimateRecursion(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"$schema":"` + draft07 + `","$ref":"#/definitions/node","definitions":{"node":{
		"type":"object","required":["name"],
		"properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/definitions/node"}},
			"left":{"$ref":"#/definitions/node"},"right":{"$ref":"#/definitions/node"}}}}}`)
	tree := func(leafName interface{}) map[string]interface{} {
		v := map[string]interface{}{"name": leafName}
		for i := 0; i < 60; i++ {
			v = map[string]interface{}{"name": fmt.Sprint(i), "children": []interface{}{v, map[string]interface{}{"name": "x"}},
				"left": map[string]interface{}{"name": "l"}, "right": map[string]interface{}{"name": "r"}}
		}
		return v
	}
	if err := validateSchema(context.Background(), "demo", raw, tree("leaf")); err != nil {
		t.Errorf("a deep tree = %v; want valid", err)
	}
	if err := validateSchema(context.Background(), "demo", raw, tree(5)); err == nil || !strings.Contains(err.Error(), "do not match") {
		t.Errorf("a deep tree with a number for a name = %v; want a mismatch", err)
	}
}

// chartShapedSchema is the values.schema.json Helm's own tests use for a chart.
const chartShapedSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "properties": {
    "addresses": {"description": "List of addresses", "type": "array",
      "items": {"type": "object", "properties": {"city": {"type": "string"}, "number": {"type": "number"}, "street": {"type": "string"}}}},
    "age": {"description": "Age", "minimum": 0, "type": "integer"},
    "employmentInfo": {"type": "object", "required": ["salary"],
      "properties": {"salary": {"minimum": 0, "type": "number"}, "title": {"type": "string"}}},
    "firstname": {"description": "First name", "type": "string"},
    "lastname": {"type": "string"},
    "likesCoffee": {"type": "boolean"},
    "phoneNumbers": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["firstname", "lastname", "addresses", "employmentInfo"],
  "title": "Values",
  "type": "object"
}`

func TestValidateSchemaChartShaped(t *testing.T) {
	t.Parallel()
	vals := func(age interface{}) map[string]interface{} {
		return map[string]interface{}{
			"firstname": "John", "lastname": "Doe", "age": age, "likesCoffee": true,
			"employmentInfo": map[string]interface{}{"title": "Software Developer", "salary": 100000},
			"addresses": []interface{}{
				map[string]interface{}{"city": "Springfield", "street": "Main", "number": 12345},
				map[string]interface{}{"city": "New York", "street": "Broadway", "number": 67890},
			},
			"phoneNumbers": []interface{}{"(888) 888-8888", "(555) 555-5555"},
		}
	}
	if err := validateSchema(context.Background(), "demo", []byte(chartShapedSchema), vals(25)); err != nil {
		t.Errorf("= %v; want valid", err)
	}
	if err := validateSchema(context.Background(), "demo", []byte(chartShapedSchema), vals(-1)); err == nil || !strings.Contains(err.Error(), "do not match") {
		t.Errorf("a negative age = %v; want a mismatch", err)
	}
}

// TestValidateSchemaRefusesDynamicResolution: where a $recursiveRef or $dynamicRef with its anchor
// leads depends on the path validation took, so no bound can follow it.
func TestValidateSchemaRefusesDynamicResolution(t *testing.T) {
	t.Parallel()
	for name, raw := range map[string]string{
		"$recursiveRef": `{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,
			"properties":{"a":{"$recursiveRef":"#"}}}`,
		"$dynamicRef": `{"$schema":"` + draft2020 + `","$dynamicAnchor":"node",
			"properties":{"a":{"$dynamicRef":"#node"}}}`,
	} {
		err := validateSchema(context.Background(), "demo", []byte(raw), map[string]interface{}{})
		if err == nil || !strings.Contains(err.Error(), "resolves dynamically") {
			t.Errorf("%s: %v; want refused", name, err)
		}
	}
}

// TestValidateSchemaRefusesTooManyNodes: the compiler's time grows with the square of the
// subschemas, so their number is bounded before it runs.
func TestValidateSchemaRefusesTooManyNodes(t *testing.T) {
	t.Parallel()
	raw := `{"allOf":[` + strings.Repeat(`{},`, maxSchemaNodes) + `{}]}`
	err := validateSchema(context.Background(), "demo", []byte(raw), nil)
	if err == nil || !strings.Contains(err.Error(), "is refused: it has more than 10000 objects and booleans") {
		t.Errorf("= %v; want refused", err)
	}
}

// TestValidateSchemaStopsAtTheDeadline: an ended context stops validation before it starts, and
// one that ends during it stops the wait, with an error naming the deadline.
func TestValidateSchemaStopsAtTheDeadline(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	err := validateSchema(cancelled, "demo", []byte(chartShapedSchema), map[string]interface{}{})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stopped at the deadline") {
		t.Errorf("a cancelled context = %v; want stopped at the deadline", err)
	}
	err = validateValues(cancelled, schemaChart(chartShapedSchema), nil)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stopped at the deadline") {
		t.Errorf("validateValues with a cancelled context = %v; want stopped at the deadline", err)
	}

	// 16 levels would be refused by the bound; compiled and run directly, they take the
	// validator about 0.3 s, long past this deadline.
	schema, err := compileSchema("demo", []byte(multiplyingSchemas()["allOf"].build(16)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = runValidation(ctx, "demo", schema, map[string]interface{}{"a": "x"})
	t.Logf("stopped after %v", time.Since(start))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stopped at the deadline") {
		t.Errorf("a deadline during validation = %v; want stopped at the deadline", err)
	}
}

// BenchmarkValidateSchemaNested: the cost of a nested schema by depth, listing the next level
// twice (refused past 14 levels) or once beside an inline schema (accepted at every depth).
func BenchmarkValidateSchemaNested(b *testing.B) {
	shapes := map[string]multiplyingSchema{
		"twice": {dialect: draft2020, defs: "$defs", body: listedTwice("allOf")},
		"once": {dialect: draft2020, defs: "$defs", body: func(next string) string {
			return fmt.Sprintf(`{"allOf":[%s,{"type":"object"}]}`, next)
		}},
	}
	for _, shape := range []string{"twice", "once"} {
		for _, levels := range []int{10, 14, 18} {
			raw := []byte(shapes[shape].build(levels))
			b.Run(fmt.Sprintf("%s/%d", shape, levels), func(b *testing.B) {
				var err error
				for i := 0; i < b.N; i++ {
					err = validateSchema(context.Background(), "demo", raw, map[string]interface{}{"a": "x"})
				}
				b.ReportMetric(0, "refused")
				if err != nil {
					b.ReportMetric(1, "refused")
				}
			})
		}
	}
}
