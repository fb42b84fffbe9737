package chartvalues

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	sigsjson "sigs.k8s.io/json"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
)

// Schema is the typed schema of both charts' values, with what the deployment allows in them.
type Schema struct {
	Images imagepolicy.Policy
	// Modes are the kube-vip modes beyond ARP for Services whose variables values may set.
	Modes map[Mode]bool
}

// Values are one chart's values as the schema accepted them.
type Values struct {
	// Map is what Helm is given: serialised from the typed values, never the text as written,
	// with the keys the operator sets itself.
	Map map[string]interface{}
	// Name is what the chart names its objects: nameOverride, or the chart's name.
	Name string
	// Image is the image repository the values ask for, or "" for the chart's default.
	Image string
	// Ref is the whole image the values ask for, repository:tag[@digest], or "" when they leave
	// the repository or the tag to the chart.
	Ref string
}

// values serialises the typed values v points to for Helm, named name, with the image img they
// ask for and, in their scheduling sched, the operator's copy of the deployment's pull Secret,
// which it writes into the guest.
func (s Schema) values(v interface{}, sched *Scheduling, img *imagepolicy.Value, name string) (Values, error) {
	sched.ImagePullSecrets = s.Images.WithPullSecret(sched.ImagePullSecrets)
	out := Values{Name: name}
	data, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(data, &out.Map)
	}
	if err != nil {
		return Values{}, err
	}
	if img != nil {
		out.Image = img.Repository
		if img.Repository != "" && img.Tag != "" {
			out.Ref = img.Repository + ":" + img.Tag
		}
	}
	return out, nil
}

// Check reads the values kube-fip-config gives chart under key, as the typed schema of the chart
// allows them, and returns them serialised for Helm, or a *guestchart.Refusal with
// ReasonValuesNotAllowed naming the value key. Every string, key or value, must be free of control
// and format characters and line separators; every key must be one the schema names.
func (s Schema) Check(chart guestchart.Chart, key string, raw map[string]interface{}) (Values, error) {
	deny := func(format string, args ...interface{}) (Values, error) {
		return Values{}, guestchart.Refuse(guestchart.ReasonValuesNotAllowed, key, format, args...)
	}
	if at := dirtyString(raw, ""); at != "" {
		return deny("%s holds a control or format character or a line separator, which a chart could render as YAML of its own", at)
	}
	docs := Keys(chart)
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if !slices.ContainsFunc(docs, func(d KeyDoc) bool { return d.Key == k }) {
			return deny("%s is not a value the operator supports for the %s chart (supported: %s)", guestchart.Shorten(k), chart, keyList(docs))
		}
	}
	var v Values
	var err error
	switch chart {
	case guestchart.Kubevip:
		v, err = s.kubevipValues(raw)
	case guestchart.CloudProvider:
		v, err = s.providerValues(raw)
	default:
		err = fmt.Errorf("%s is not a chart the operator installs", chart)
	}
	if err != nil {
		return deny("%v", err)
	}
	return v, nil
}

// Baseline is what the chart's own render for given is held to: the operator's defaults for it
// (config's, which the schema accepts by construction), named as given names the objects. Their
// image is whatever the chart defaults to: images are judged on their own, and a deployment that
// allows only its mirror still compares with the operator's defaults. Under a registry it is the
// pinned image moved there, as every value is, so that the reference is what the deployment
// allows. The baseline is the product's, never refused for want of a digest.
func (s Schema) Baseline(chart guestchart.Chart, given Values, defaults map[string]interface{}) (map[string]interface{}, error) {
	withoutImage := maps.Clone(defaults)
	if s.Images.Registry() == "" {
		delete(withoutImage, "image")
	}
	s.Images = s.Images.WithoutDigests()
	d, err := s.Check(chart, "", withoutImage)
	if err != nil {
		return nil, fmt.Errorf("the operator's default values of the %s chart are refused: %w", chart, err)
	}
	// The reference renders the PodMonitor when the configuration does: whether it exists is the
	// one switch a value has over which objects there are.
	if pm, ok := given.Map["podMonitor"].(map[string]interface{}); ok && pm["enabled"] == true {
		d.Map["podMonitor"] = map[string]interface{}{"enabled": true}
	}
	return d.Map, nil
}

// Keys lists the value keys the schema of chart supports, in the order docs/security.md shows them.
func Keys(chart guestchart.Chart) []KeyDoc {
	switch chart {
	case guestchart.Kubevip:
		return kubevipKeys()
	case guestchart.CloudProvider:
		return providerKeys()
	}
	return nil
}

// target is one value key and where its typed value goes.
type target struct {
	key  string
	into interface{}
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
		return fmt.Errorf("%s: %s", key, StrictError(strict[0]))
	}
	return nil
}

// unknownField picks the field path out of a strict decoding error.
var unknownField = regexp.MustCompile(`^(unknown|duplicate) field "([^"]*)"$`)

// StrictError says which field a strict decoding error is about, without repeating a value.
func StrictError(err error) string {
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		if m[1] == "unknown" {
			return fmt.Sprintf("%s is not a field it has", guestchart.Shorten(m[2]))
		}
		return fmt.Sprintf("%s is given twice", guestchart.Shorten(m[2]))
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

// ObjectName is what both charts name their objects after, as their helper does: the value of
// nameOverride, else the chart's name, cut at 63 characters and of a trailing "-".
func ObjectName(chart guestchart.Chart, override string) string {
	name := override
	if name == "" {
		name = string(chart)
	}
	if len(name) > 63 {
		name = name[:63]
	}
	return strings.TrimSuffix(name, "-")
}
