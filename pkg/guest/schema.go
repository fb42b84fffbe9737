package guest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

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
)

// validateValues checks the values a release is installed with against the schemas of the chart
// and of its subcharts, as Helm does, but with references confined to the schema itself. The
// install and upgrade then skip Helm's own schema validation.
func validateValues(ch *chart.Chart, values map[string]interface{}) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("validating the values failed: %v", r)
		}
	}()
	vals, err := chartutil.CoalesceValues(ch, values)
	if err != nil {
		return fmt.Errorf("the values do not merge with the chart's: %w", err)
	}
	return validateTree(ch, vals)
}

func validateTree(ch *chart.Chart, vals map[string]interface{}) error {
	if len(ch.Schema) > 0 {
		if err := validateSchema(ch.Name(), ch.Schema, vals); err != nil {
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
		if err := validateTree(sub, subVals); err != nil {
			return err
		}
	}
	return nil
}

// schemaBase is where a chart's schema is placed for the compiler; any reference that leaves it
// reaches refuseLoader.
const schemaBase = "file:///values.schema.json"

func validateSchema(name string, raw []byte, vals map[string]interface{}) error {
	if len(raw) > maxSchemaBytes {
		return fmt.Errorf("the values.schema.json of chart %s is larger than %d bytes", name, maxSchemaBytes)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("the values.schema.json of chart %s is refused: it is not valid JSON (%s)", name, redact.Shorten(err.Error(), 200, "…"))
	}
	refs := 0
	if err := checkSchemaNode(doc, 0, &refs); err != nil {
		return fmt.Errorf("the values.schema.json of chart %s is refused: %w", name, err)
	}
	compiler := jsonschema.NewCompiler()
	compiler.UseLoader(refuseLoader{})
	if err := compiler.AddResource(schemaBase, doc); err != nil {
		return fmt.Errorf("the values.schema.json of chart %s is refused: %w", name, err)
	}
	schema, err := compiler.Compile(schemaBase)
	if err != nil {
		return fmt.Errorf("the values.schema.json of chart %s does not compile: %w", name, err)
	}
	if err := schema.Validate(vals); err != nil {
		return fmt.Errorf("the values do not match the values.schema.json of chart %s: %w", name, err)
	}
	return nil
}

// checkSchemaNode refuses nesting deeper than maxSchemaDepth, more than maxSchemaRefs references,
// and any reference that leaves the document.
func checkSchemaNode(node interface{}, depth int, refs *int) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("it nests deeper than %d levels", maxSchemaDepth)
	}
	switch n := node.(type) {
	case map[string]interface{}:
		for k, v := range n {
			switch k {
			case "$ref", "$dynamicRef", "$recursiveRef":
				*refs++
				if *refs > maxSchemaRefs {
					return fmt.Errorf("it has more than %d references", maxSchemaRefs)
				}
				if s, ok := v.(string); ok && !strings.HasPrefix(s, "#") {
					return fmt.Errorf("%s %q points outside the schema", k, redact.Shorten(s, 80, "…"))
				}
			}
			if err := checkSchemaNode(v, depth+1, refs); err != nil {
				return err
			}
		}
	case []interface{}:
		for _, v := range n {
			if err := checkSchemaNode(v, depth+1, refs); err != nil {
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
