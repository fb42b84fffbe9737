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

// TestDocumentYAMLValidCatchesBadObjects: the check above refuses what the API server refuses.
func TestDocumentYAMLValidCatchesBadObjects(t *testing.T) {
	v := kubefipValidators(t)["kubefip.k8s.binbash.org/v1/FloatingIPRange"]
	for name, spec := range map[string]map[string]interface{}{
		"no iprange":                 {"exclude": []interface{}{"10.0.0.1"}},
		"an iprange that is no CIDR": {"iprange": "10.0.0.0/33"},
		"an IPv4-mapped exclude":     {"iprange": "10.0.0.0/24", "exclude": []interface{}{"::ffff:10.0.0.1"}},
	} {
		obj := map[string]interface{}{
			"apiVersion": "kubefip.k8s.binbash.org/v1", "kind": "FloatingIPRange",
			"metadata": map[string]interface{}{"name": "r"}, "spec": spec,
		}
		if errs := v.validate(obj); len(errs) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
}
