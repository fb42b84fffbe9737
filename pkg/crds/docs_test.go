package crds

import (
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// undescribed returns the path of every schema below props without a description.
func undescribed(path string, props *apiextv1.JSONSchemaProps) []string {
	var missing []string
	if props.Description == "" {
		missing = append(missing, path)
	}
	for name, p := range props.Properties {
		missing = append(missing, undescribed(path+"."+name, &p)...)
	}
	if props.Items != nil && props.Items.Schema != nil {
		for name, p := range props.Items.Schema.Properties {
			missing = append(missing, undescribed(path+"[]."+name, &p)...)
		}
	}
	if props.AdditionalProperties != nil && props.AdditionalProperties.Schema != nil {
		for name, p := range props.AdditionalProperties.Schema.Properties {
			missing = append(missing, undescribed(path+"[*]."+name, &p)...)
		}
	}
	return missing
}

// TestEveryFieldIsDescribed: the top-level schema and every field below it, status included, carry
// a description for kubectl explain and the Rancher UI.
func TestEveryFieldIsDescribed(t *testing.T) {
	t.Parallel()
	list, err := List()
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range list {
		root := def.Spec.Versions[0].Schema.OpenAPIV3Schema
		fields := []string{"spec", "status"}
		if def.Spec.Names.Kind == "FloatingIPAllocation" {
			// An allocation has no status: its existence is the claim.
			fields = []string{"spec"}
			if _, ok := root.Properties["status"]; ok {
				t.Errorf("%s: a status in the schema", def.Name)
			}
		}
		for _, field := range fields {
			if _, ok := root.Properties[field]; !ok {
				t.Errorf("%s: no %s in the schema", def.Name, field)
			}
		}
		for _, path := range undescribed(def.Spec.Names.Kind, root) {
			t.Errorf("%s: %s has no description", def.Name, path)
		}
	}
}

// TestSwaggerDocsMatchTheTypes: the generated SwaggerDoc methods say what the doc comments in
// types.go say, so the CRDs never carry stale descriptions.
func TestSwaggerDocsMatchTheTypes(t *testing.T) {
	t.Parallel()
	types := map[string]reflect.Type{}
	for _, obj := range []interface{}{
		v1.FloatingIP{}, v1.FloatingIPSpec{}, v1.FloatingIPStatus{},
		v1.FloatingIPRange{}, v1.FloatingIPRangeSpec{}, v1.FloatingIPRangeStatus{}, v1.Allocation{},
		v1.FloatingIPAllocation{}, v1.FloatingIPAllocationSpec{}, v1.FloatingIPReference{},
		v1.AddressSpace{}, v1.Retention{}, v1.ClusterReference{}, v1.GuestRelease{}, v1.KeptAddress{}, v1.RangeDNS{},
	} {
		types[reflect.TypeOf(obj).Name()] = reflect.TypeOf(obj)
	}
	parsed := runtime.ParseDocumentationFrom(filepath.Join("..", "apis", "kubefip.k8s.binbash.org", "v1", "types.go"))
	if len(parsed) != len(types) {
		t.Fatalf("types.go declares %d struct types, the test knows %d: add the new type here", len(parsed), len(types))
	}
	for _, kubeType := range parsed {
		typ, ok := types[kubeType[0].Name]
		if !ok {
			t.Fatalf("type %s of types.go is unknown to the test", kubeType[0].Name)
		}
		compiled := docsOf(typ)
		kubeType[0].Name = ""
		for _, pair := range kubeType {
			if pair.Name == "metadata" {
				continue
			}
			want, err := strconv.Unquote(`"` + pair.Doc + `"`)
			if err != nil {
				t.Fatalf("%s.%s: %v", typ.Name(), pair.Name, err)
			}
			if want == "" {
				t.Errorf("%s: field %q has no doc comment", typ.Name(), pair.Name)
				continue
			}
			if got := compiled[pair.Name]; got != want {
				t.Errorf("%s: SwaggerDoc()[%q] = %q, the doc comment says %q: run go generate", typ.Name(), pair.Name, got, want)
			}
		}
	}
}

// TestCompatibilityWithTheOriginal: the original CRDs' group, kinds, short names and
// FloatingIPRange's spec.region are kept, and every kind, the new FloatingIPAllocation too, is in
// the kubefip category.
func TestCompatibilityWithTheOriginal(t *testing.T) {
	t.Parallel()
	list, err := List()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"floatingipranges.kubefip.k8s.binbash.org": {"fiprange", "fipranges"},
		"floatingips.kubefip.k8s.binbash.org":      {"fip", "fips"},
		// Not in the original: the record of held addresses, one object per address.
		"floatingipallocations.kubefip.k8s.binbash.org": {"fipalloc", "fipallocs"},
	}
	for _, def := range list {
		shortNames, ok := want[def.Name]
		if !ok {
			t.Errorf("unexpected CRD %s", def.Name)
			continue
		}
		delete(want, def.Name)
		if def.Spec.Group != "kubefip.k8s.binbash.org" || def.Spec.Versions[0].Name != "v1" {
			t.Errorf("%s: group %s version %s", def.Name, def.Spec.Group, def.Spec.Versions[0].Name)
		}
		if !slices.Equal(def.Spec.Names.ShortNames, shortNames) {
			t.Errorf("%s: short names %v, want %v", def.Name, def.Spec.Names.ShortNames, shortNames)
		}
		if !slices.Equal(def.Spec.Names.Categories, []string{"kubefip"}) {
			t.Errorf("%s: categories %v, want [kubefip]", def.Name, def.Spec.Names.Categories)
		}
		if def.Spec.Names.Kind != "FloatingIPRange" {
			continue
		}
		region, ok := def.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["region"]
		if !ok {
			t.Fatalf("%s: spec.region is not in the schema, so the API server prunes it", def.Name)
		}
		// Any string the original accepted is still accepted.
		if region.Type != "string" || region.Pattern != "" || region.MaxLength != nil || len(region.XValidations) > 0 || len(region.Enum) > 0 {
			t.Errorf("%s: spec.region is %+v; want a plain string as in the original", def.Name, region)
		}
	}
	for name := range want {
		t.Errorf("CRD %s is missing", name)
	}
}
