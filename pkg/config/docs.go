package config

import (
	"maps"
	"regexp"
	"strings"
	"unicode"
)

// chartValue is how the chart's values hold an option (config.<key>): the type values.yaml
// writes its default as, and the JSON schema Helm checks the value against. The chart renders
// every value into kube-fip-config as a string, so the schema admits the forms the parser
// accepts, and an empty string for the default.
type chartValue struct {
	valuesType string
	schema     map[string]interface{}
}

// The types values.yaml writes a default as (OptionDoc.ValuesType).
const (
	ValuesString  = "string"
	ValuesInteger = "integer"
	ValuesBoolean = "boolean"
	// ValuesYAML is YAML text, written as a block.
	ValuesYAML = "yaml"
)

// OptionDoc is what the documentation and the chart say of one kube-fip-config option.
type OptionDoc struct {
	Key string
	// Default is the default as kube-fip-config holds it; empty for none.
	Default string
	// Doc says what the option does and what it takes, in Markdown.
	Doc string
	// ValuesType is the type values.yaml writes the default as: one of the Values* constants.
	ValuesType string
	// Schema is the JSON schema of the chart value config.<Key>, with Doc as its description.
	Schema map[string]interface{}
}

// Documentation lists every option in the order of Keys, for go generate to write
// docs/configuration.md's table and the chart's config values and their schema.
func Documentation() []OptionDoc {
	opts := allOptions()
	out := make([]OptionDoc, len(opts))
	for i, o := range opts {
		schema := map[string]interface{}{"description": plain(o.doc)}
		maps.Copy(schema, o.chart.schema)
		out[i] = OptionDoc{Key: o.key, Default: o.def, Doc: o.doc, ValuesType: o.chart.valuesType, Schema: schema}
	}
	return out
}

// mdLink is a Markdown link, whose text plain keeps.
var mdLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// plain is Markdown as plain text: links become their text, code loses its backquotes.
func plain(md string) string {
	return strings.ReplaceAll(mdLink.ReplaceAllString(md, "$1"), "`", "")
}

// blankOr is a pattern that admits an empty (or blank) string and what inner admits, with the
// blanks around it the parser trims.
func blankOr(inner string) string {
	return `^\s*(|` + inner + `)\s*$`
}

// inner is re without its anchors.
func inner(re *regexp.Regexp) string {
	return strings.TrimSuffix(strings.TrimPrefix(re.String(), "^"), "$")
}

// textLike is a string matching re.
func textLike(re *regexp.Regexp) chartValue {
	return chartValue{ValuesString, map[string]interface{}{"type": "string", "pattern": blankOr(inner(re))}}
}

// anyCaseWord is one of words, in any case.
func anyCaseWord(words ...string) chartValue {
	alts := make([]string, len(words))
	for i, w := range words {
		var b strings.Builder
		for _, r := range w {
			b.WriteString("[" + string(unicode.ToUpper(r)) + string(unicode.ToLower(r)) + "]")
		}
		alts[i] = b.String()
	}
	return chartValue{ValuesString, map[string]interface{}{"type": "string", "pattern": blankOr(strings.Join(alts, "|"))}}
}

// integer is a whole number from minimum to maximum, as a YAML number.
func integer(minimum, maximum int) chartValue {
	return chartValue{ValuesInteger, map[string]interface{}{"type": "integer", "minimum": minimum, "maximum": maximum}}
}

// wholeNumber is a whole number from minimum to maximum, as a YAML number or a string.
func wholeNumber(minimum, maximum int) chartValue {
	return chartValue{ValuesInteger, oneOf(integer(minimum, maximum).schema,
		map[string]interface{}{"type": "string", "pattern": blankOr(`\+?[0-9]+`)})}
}

// duration is a Go duration, or whole seconds up to maxSeconds, as a YAML number or a string.
func duration(maxSeconds int) chartValue {
	return chartValue{ValuesString, oneOf(integer(0, maxSeconds).schema,
		map[string]interface{}{"type": "string", "pattern": blankOr(`[0-9]+|([0-9]*\.?[0-9]+(ns|us|µs|μs|ms|s|m|h))+`)})}
}

// boolean is what strconv.ParseBool accepts, in any case, as a YAML boolean or a string.
func boolean() chartValue {
	return chartValue{ValuesBoolean, oneOf(map[string]interface{}{"type": "boolean"},
		map[string]interface{}{"type": "string", "pattern": blankOr(`[01]|[Tt]([Rr][Uu][Ee])?|[Ff]([Aa][Ll][Ss][Ee])?`)})}
}

// version is a chart version, as a string or a YAML number (0.6 is read as one).
func version() chartValue {
	return chartValue{ValuesString, oneOf(textLike(chartVersion).schema,
		map[string]interface{}{"type": "number", "minimum": 0})}
}

// yamlText is YAML text, which the parser judges.
func yamlText() chartValue {
	return chartValue{ValuesYAML, map[string]interface{}{"type": "string"}}
}

func oneOf(schemas ...interface{}) map[string]interface{} {
	return map[string]interface{}{"oneOf": schemas}
}
