package charts

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	kubefipv1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
)

// yamlBlock is one fenced YAML block of a Markdown document, under the "##" section it is in.
type yamlBlock struct {
	file, section, body string
}

// yamlBlocks lists the ```yaml blocks of a Markdown text, each taken out of the indentation of
// its fence (a block inside a numbered list is indented).
func yamlBlocks(file, text string) []yamlBlock {
	var blocks []yamlBlock
	section := ""
	var body []string
	indent, in := "", false
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case in && trimmed == "```":
			blocks = append(blocks, yamlBlock{file, section, strings.Join(body, "\n")})
			in, body = false, nil
		case in:
			body = append(body, strings.TrimPrefix(line, indent))
		case trimmed == "```yaml":
			in, indent = true, line[:len(line)-len(strings.TrimLeft(line, " "))]
		case strings.HasPrefix(line, "## "):
			section = strings.TrimSpace(line[3:])
		}
	}
	return blocks
}

// crdValidator checks an object as the API server checks a custom resource against its CRD's
// schema: the OpenAPI schema (types, formats, patterns, required fields) and its CEL rules.
type crdValidator struct {
	schema     validation.SchemaValidator
	structural *schema.Structural
	cel        *cel.Validator
}

func (v crdValidator) validate(obj map[string]interface{}) field.ErrorList {
	errs := validation.ValidateCustomResource(nil, obj, v.schema)
	celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// kubefipValidators reads the CRD chart's generated CRDs and returns a validator per kind.
func kubefipValidators(t *testing.T) map[string]crdValidator {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir(CRDChart), "templates", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRD in the CRD chart: %v", err)
	}
	out := map[string]crdValidator{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, version := range crd.Spec.Versions {
			var internal apiextensions.JSONSchemaProps
			if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(version.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			sv, _, err := validation.NewSchemaValidator(&internal)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			structural, err := schema.NewStructural(&internal)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out[crd.Spec.Group+"/"+version.Name+"/"+crd.Spec.Names.Kind] = crdValidator{
				schema: sv, structural: structural, cel: cel.NewValidator(structural, true, celconfig.PerCallLimit),
			}
		}
	}
	return out
}

// TestDocumentYAMLValid: every kubefip object shown in the README and docs/ is one the API server
// accepts: valid against its CRD's schema and CEL rules, as generated into the CRD chart. The
// administrator's first FloatingIPRange is among them, carries the two annotations that tie it to
// a Harvester cluster and network, and is a range the operator hands addresses out of.
func TestDocumentYAMLValid(t *testing.T) {
	validators := kubefipValidators(t)
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{filepath.Join(repoRoot, "README.md")}, docs...)
	var firstRange map[string]interface{}
	checked := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(repoRoot, doc)
		for _, b := range yamlBlocks(name, string(data)) {
			var obj map[string]interface{}
			if err := yaml.Unmarshal([]byte(b.body), &obj); err != nil {
				t.Errorf("%s, %q: YAML: %v\n%s", b.file, b.section, err, b.body)
				continue
			}
			apiVersion, _ := obj["apiVersion"].(string)
			if !strings.HasPrefix(apiVersion, kubefipv1.SchemeGroupVersion.Group+"/") {
				continue // a fragment, or another API's object
			}
			kind, _ := obj["kind"].(string)
			v, ok := validators[apiVersion+"/"+kind]
			if !ok {
				t.Errorf("%s, %q: %s %s is no kind of the CRD chart", b.file, b.section, apiVersion, kind)
				continue
			}
			checked++
			for _, e := range v.validate(obj) {
				t.Errorf("%s, %q: %s refused: %v\n%s", b.file, b.section, kind, e, b.body)
			}
			if name == "README.md" && b.section == "Your first FloatingIP" && kind == "FloatingIPRange" {
				firstRange = obj
			}
		}
	}
	if checked < 5 {
		t.Errorf("only %d kubefip objects found in the documents", checked)
	}
	if firstRange == nil {
		t.Fatal(`README.md's "Your first FloatingIP" shows no FloatingIPRange`)
	}
	var r kubefipv1.FloatingIPRange
	data, _ := yaml.Marshal(firstRange)
	if err := yaml.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{kubefipv1.AnnotationHarvesterClusterName, kubefipv1.AnnotationHarvesterNetworkName} {
		if strings.TrimSpace(r.Annotations[a]) == "" {
			t.Errorf("the first FloatingIPRange lacks the annotation %s", a)
		}
	}
	pool, err := ipam.NewPool(r.Spec.IPRange, r.Spec.Exclude)
	if err != nil {
		t.Fatalf("the first FloatingIPRange is refused by the operator: %v", err)
	}
	if _, err := pool.ReserveNext(ipam.Owner{Namespace: "c-m-first", Name: "first-kubevip", UID: "first"}); err != nil {
		t.Errorf("the first FloatingIPRange hands out no address: %v", err)
	}
}

// TestSchemaRefusesMalformedObjects: the CRDs' schemas and rules, run as the API server runs them,
// refuse malformed ranges, addresses and allocations naming the field: the check above refuses
// what the API server refuses. An allocation whose name is not its address, or that misses its
// owner, range or a retention's end, is refused, so the API server's uniqueness of names stays the
// uniqueness of addresses (every other spelling the name rule refuses: TestAllocationRulesRefuse,
// pkg/crds).
func TestSchemaRefusesMalformedObjects(t *testing.T) {
	validators := kubefipValidators(t)
	owner := map[string]interface{}{"namespace": "c-m-schema", "name": "r1", "uid": "0b6c2a8e-5d3f-4f7a-9a7e-000000000001"}
	alloc := func(address string, edit func(map[string]interface{})) map[string]interface{} {
		spec := map[string]interface{}{"address": address, "range": "r", "owner": owner}
		if edit != nil {
			edit(spec)
		}
		return spec
	}
	hash := "." + kubefipv1.AddressSpace{}.Hash()
	const nameRule = "metadata.name must be the address"
	for _, tc := range []struct {
		why, kind, name string
		spec            map[string]interface{}
		want            string
	}{
		{"no iprange", "FloatingIPRange", "r", map[string]interface{}{"exclude": []interface{}{"10.0.0.1"}}, "spec.iprange"},
		{"a CIDR of text", "FloatingIPRange", "r", map[string]interface{}{"iprange": "not-a-cidr"}, "spec.iprange"},
		{"an IPv4 prefix of 33", "FloatingIPRange", "r", map[string]interface{}{"iprange": "10.0.0.0/33"}, "spec.iprange"},
		{"an octet of 256", "FloatingIPRange", "r", map[string]interface{}{"iprange": "10.0.0.256/24"}, "spec.iprange"},
		{"an IPv6 prefix of 129", "FloatingIPRange", "r", map[string]interface{}{"iprange": "fd00::/129"}, "spec.iprange"},
		{"no prefix", "FloatingIPRange", "r", map[string]interface{}{"iprange": "10.0.0.1"}, "spec.iprange"},
		{"an exclude of text", "FloatingIPRange", "r", map[string]interface{}{"iprange": "10.0.0.0/24", "exclude": []interface{}{"ten.0.0.1"}}, "spec.exclude[0]"},
		{"an IPv4-mapped exclude", "FloatingIPRange", "r", map[string]interface{}{"iprange": "10.0.0.0/24", "exclude": []interface{}{"::ffff:10.0.0.1"}}, "spec.exclude[0]"},
		{"an address with an octet of 256", "FloatingIP", "f", map[string]interface{}{"ipaddress": "10.0.0.256"}, "spec.ipaddress"},
		{"a CIDR for an address", "FloatingIP", "f", map[string]interface{}{"ipaddress": "10.0.0.1/32"}, "spec.ipaddress"},
		{"words for an address", "FloatingIP", "f", map[string]interface{}{"ipaddress": "hello"}, "spec.ipaddress"},
		{"a malformed IPv6 address", "FloatingIP", "f", map[string]interface{}{"ipaddress": "fd00:::1"}, "spec.ipaddress"},
		{"three octets", "FloatingIP", "f", map[string]interface{}{"ipaddress": "10.0.1"}, "spec.ipaddress"},
		{"an allocation named by another address", "FloatingIPAllocation", "10.214.1.6" + hash, alloc("10.214.1.5", nil), nameRule},
		{"an allocation named by no address", "FloatingIPAllocation", "schema-alloc", alloc("10.214.1.5", nil), nameRule},
		{"an allocation of a leading zero", "FloatingIPAllocation", "010.214.1.5" + hash, alloc("010.214.1.5", nil), "spec.address"},
		{"an allocation of a CIDR", "FloatingIPAllocation", "10.214.1.5" + hash, alloc("10.214.1.5/32", nil), "spec.address"},
		{"an allocation of no owner", "FloatingIPAllocation", "10.214.1.5" + hash, alloc("10.214.1.5", func(s map[string]interface{}) { delete(s, "owner") }), "spec.owner"},
		{"an owner without UID", "FloatingIPAllocation", "10.214.1.5" + hash, alloc("10.214.1.5", func(s map[string]interface{}) {
			s["owner"] = map[string]interface{}{"namespace": "c-m-schema", "name": "r1"}
		}), "spec.owner.uid"},
		{"an allocation of no range", "FloatingIPAllocation", "10.214.1.5" + hash, alloc("10.214.1.5", func(s map[string]interface{}) { delete(s, "range") }), "spec.range"},
		{"a retention for nobody", "FloatingIPAllocation", "10.214.1.5" + hash, alloc("10.214.1.5", func(s map[string]interface{}) {
			s["retained"] = map[string]interface{}{"until": "2026-11-25T00:00:00Z", "cluster": map[string]interface{}{"namespace": "fleet-default"}}
		}), "spec.retained.cluster.name"},
		{"a retention without an end", "FloatingIPAllocation", "10.214.1.5" + hash, alloc("10.214.1.5", func(s map[string]interface{}) {
			s["retained"] = map[string]interface{}{"cluster": map[string]interface{}{"namespace": "fleet-default", "name": "demo"}}
		}), "spec.retained.until"},
	} {
		metadata := map[string]interface{}{"name": tc.name}
		if tc.kind == "FloatingIP" {
			metadata["namespace"] = "c-m-schema"
		}
		obj := map[string]interface{}{"apiVersion": "kubefip.k8s.binbash.org/v1", "kind": tc.kind, "metadata": metadata, "spec": tc.spec}
		errs := validators["kubefip.k8s.binbash.org/v1/"+tc.kind].validate(obj)
		if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want) {
			t.Errorf("%s: %v; want a refusal naming %q", tc.why, errs, tc.want)
		}
	}
}
