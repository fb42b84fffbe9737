package installpolicy

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	sigsjson "sigs.k8s.io/json"
)

// Values are one chart's values as the schema accepted them.
type Values struct {
	// Map is what Helm is given: serialised from the typed values, never the text as written,
	// with the keys the operator sets itself (values.go of each chart).
	Map map[string]interface{}
	// Name is what the chart names its objects: nameOverride, or the chart's name.
	Name string
	// Image is the image repository the values ask for, or "" for the chart's default.
	Image string
	// Ref is the whole image the values ask for, repository:tag[@digest], or "" when they leave
	// the repository or the tag to the chart.
	Ref string
}

// imageValues completes out with the image the values ask for.
func (out *Values) imageValues(img *image) {
	if img == nil {
		return
	}
	out.Image = img.Repository
	if img.Repository != "" && img.Tag != "" {
		out.Ref = img.Repository + ":" + img.Tag
	}
}

// CheckValues reads the values kube-fip-config gives chart under key, as the typed schema of the
// chart allows them, and returns them serialised for Helm, or a *Refusal with
// ReasonValuesNotAllowed naming the value key. Every string, key or value, must be free of control
// and format characters and line separators; every key must be one the schema names.
func (p Policy) CheckValues(chart Chart, key string, raw map[string]interface{}) (Values, error) {
	deny := func(format string, args ...interface{}) (Values, error) {
		return Values{}, refuse(ReasonValuesNotAllowed, key, format, args...)
	}
	if at := dirtyString(raw, ""); at != "" {
		return deny("%s holds a control or format character or a line separator, which a chart could render as YAML of its own", at)
	}
	docs := p.keys(chart)
	supported := map[string]bool{}
	for _, d := range docs {
		supported[d.Key] = true
	}
	var unknown []string
	for k := range raw {
		if !supported[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return deny("%s is not a value the operator supports for the %s chart (supported: %s)", shorten(unknown[0]), chart, keyList(docs))
	}
	var v Values
	var err error
	switch chart {
	case Kubevip:
		v, err = p.kubevipValues(raw)
	case CloudProvider:
		v, err = p.providerValues(raw)
	default:
		err = fmt.Errorf("%s is not a chart the operator installs", chart)
	}
	if err != nil {
		return deny("%v", err)
	}
	return v, nil
}

// ValueKeys lists the value keys the schema of chart supports, in the order docs/security.md shows them.
func ValueKeys(chart Chart) []KeyDoc {
	return Policy{}.keys(chart)
}

// keys lists the value keys the schema of chart supports.
func (p Policy) keys(chart Chart) []KeyDoc {
	switch chart {
	case Kubevip:
		return kubevipKeys()
	case CloudProvider:
		return providerKeys()
	}
	return nil
}

// target is one value key and where its typed value goes.
type target struct {
	key  string
	into interface{}
}

// decodeKeys decodes each target's key of raw, stopping at the first refusal.
func decodeKeys(raw map[string]interface{}, targets ...target) error {
	for _, t := range targets {
		if err := decodeKey(raw, t.key, t.into); err != nil {
			return err
		}
	}
	return nil
}

// decodeKey decodes raw[key], when present, into the typed into: strictly, as the API server
// decodes (case-sensitive field names, no unknown or repeated field), so that a mapping where a
// list belongs, or a field the type lacks, is refused naming the key.
func decodeKey(raw map[string]interface{}, key string, into interface{}) error {
	v, ok := raw[key]
	if !ok || v == nil {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s cannot be read: %w", key, err)
	}
	strict, err := sigsjson.UnmarshalStrict(data, into)
	if err != nil {
		return fmt.Errorf("%s %s", key, shapeError(err))
	}
	if len(strict) > 0 {
		return fmt.Errorf("%s: %s", key, strictError(strict[0]))
	}
	return nil
}

// unknownField picks the field path out of a strict decoding error.
var unknownField = regexp.MustCompile(`^(unknown|duplicate) field "([^"]*)"$`)

// strictError says which field a strict decoding error is about, without repeating a value.
func strictError(err error) string {
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		if m[1] == "unknown" {
			return fmt.Sprintf("%s is not a field it has", shorten(m[2]))
		}
		return fmt.Sprintf("%s is given twice", shorten(m[2]))
	}
	return "does not decode strictly"
}

// shapeError says what was expected where the type of a value is wrong.
func shapeError(err error) string {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		where := strings.TrimPrefix(typ.Field, ".")
		if where != "" {
			where = " at " + where
		}
		return fmt.Sprintf("has a %s%s where a %s belongs", typ.Value, where, goShape(typ.Type.Kind().String()))
	}
	return "does not have the shape the chart reads"
}

// goShape names a Go kind as YAML calls it.
func goShape(kind string) string {
	switch kind {
	case "slice", "array":
		return "list"
	case "map", "struct", "ptr":
		return "mapping"
	case "string":
		return "string"
	case "bool":
		return "boolean"
	}
	return "number"
}

// serialise turns typed values into the map Helm is given.
func serialise(v interface{}) (map[string]interface{}, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]interface{}{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// image is the image key both charts read.
type image struct {
	Repository string `json:"repository,omitempty"`
	Tag        string `json:"tag,omitempty"`
	PullPolicy string `json:"pullPolicy,omitempty"`
}

func (p Policy) checkImageValues(chart Chart, img *image) error {
	if img == nil || img.Tag == "" {
		// The chart's default tag carries no digest.
		if err := p.pinned("image.tag", ""); err != nil {
			return err
		}
	}
	if img == nil {
		return nil
	}
	if img.Repository != "" && !p.imageAllowed(chart, img.Repository) {
		return fmt.Errorf("image.repository %q is not one of the deployment's allowed %s images (%s)", shorten(img.Repository), chart, p.allowedImages(chart))
	}
	if img.Tag != "" {
		if err := checkTag(chart, img.Tag); err != nil {
			return fmt.Errorf("image.tag %w", err)
		}
		if err := p.pinned("image.tag", img.Tag); err != nil {
			return err
		}
	}
	switch img.PullPolicy {
	case "", "Always", "IfNotPresent", "Never":
	default:
		return fmt.Errorf("image.pullPolicy must be Always, IfNotPresent or Never")
	}
	return nil
}

// nameOverride is what both charts name their objects after, as their helper does: the value,
// else the chart's name, cut at 63 characters and of a trailing "-".
func objectName(chart Chart, override string) string {
	name := override
	if name == "" {
		name = string(chart)
	}
	if len(name) > 63 {
		name = name[:63]
	}
	return strings.TrimSuffix(name, "-")
}
