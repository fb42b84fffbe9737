package charts

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubefip/kube-fip-operator/test/rig/backup"
)

// apiFeature is an API field whose effect depends on a Kubernetes feature gate, and the first
// minor release in which the gate is on by default. An API server without the gate on drops the
// field or ignores it silently, so the object it judges is not the one the chart rendered.
type apiFeature struct {
	gate string
	// since is the first minor release with the gate on by default (beta or GA).
	since string
	// used reports whether a rendered object relies on the feature.
	used func(obj map[string]interface{}) bool
}

// apiFeatures are the gated fields the charts may use. The versions are the gates' history in
// Kubernetes' versioned feature specs (k8s.io/apiserver and k8s.io/apiextensions-apiserver
// pkg/features, v0.32; in v1.30.14 the comments above each gate):
//   - AdmissionWebhookMatchConditions: alpha (off) 1.27, beta (on) 1.28, GA 1.30;
//   - CustomResourceValidationExpressions (x-kubernetes-validations): alpha 1.23, beta (on) 1.25,
//     GA 1.29;
//   - CRDValidationRatcheting (optionalOldSelf): alpha 1.28, beta (on) 1.30, GA 1.33;
//   - CustomResourceFieldSelectors (selectableFields): alpha 1.30, beta (on) 1.31, GA 1.32.
func apiFeatures() []apiFeature {
	return []apiFeature{
		{"AdmissionWebhookMatchConditions", "1.28", func(obj map[string]interface{}) bool {
			webhooks, _, _ := unstructured.NestedSlice(obj, "webhooks")
			for _, w := range webhooks {
				if m, ok := w.(map[string]interface{}); ok && len(sliceAt(m, "matchConditions")) > 0 {
					return true
				}
			}
			return false
		}},
		{"CustomResourceValidationExpressions", "1.25", func(obj map[string]interface{}) bool {
			return hasKey(obj, "x-kubernetes-validations")
		}},
		{"CRDValidationRatcheting", "1.30", func(obj map[string]interface{}) bool { return hasKey(obj, "optionalOldSelf") }},
		{"CustomResourceFieldSelectors", "1.31", func(obj map[string]interface{}) bool { return hasKey(obj, "selectableFields") }},
	}
}

func sliceAt(m map[string]interface{}, key string) []interface{} {
	s, _ := m[key].([]interface{})
	return s
}

// hasKey reports whether key appears anywhere in v, at any depth.
func hasKey(v interface{}, key string) bool {
	switch x := v.(type) {
	case map[string]interface{}:
		for k, child := range x {
			if k == key || hasKey(child, key) {
				return true
			}
		}
	case []interface{}:
		for _, child := range x {
			if hasKey(child, key) {
				return true
			}
		}
	}
	return false
}

// chartsMinimumKube renders both charts with every optional part on and returns the oldest
// Kubernetes minor release with every gated field they use on by default, and the fields' gates.
func chartsMinimumKube(t *testing.T) (*semver.Version, []string) {
	t.Helper()
	crd, err := Load(chartDir(CRDChart))
	if err != nil {
		t.Fatal(err)
	}
	crdObjs, err := Render(crd, RenderOptions{KubeVersion: testKubeVersion})
	if err != nil {
		t.Fatal(err)
	}
	values := allSwitchesOn()
	values["backup"] = map[string]interface{}{"resourceSet": map[string]interface{}{"enabled": true}}
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render(c, RenderOptions{Namespace: testNamespace, Values: values, KubeVersion: testKubeVersion,
		APIVersions: append(append(InstallAPIVersions(), monitoringAPIVersions...), backup.ResourceSetAPIVersion)})
	if err != nil {
		t.Fatal(err)
	}
	min := semver.MustParse("1.0.0")
	var gates []string
	for _, f := range apiFeatures() {
		for _, o := range append(objs, crdObjs...) {
			if f.used(o.Object) {
				gates = append(gates, fmt.Sprintf("%s (%s %s, on from %s)", f.gate, o.GetKind(), o.GetName(), f.since))
				if v := semver.MustParse(f.since + ".0"); v.GreaterThan(min) {
					min = v
				}
				break
			}
		}
	}
	return min, gates
}

// TestKubeVersionFollowsTheAPIs: both charts admit exactly the Kubernetes releases on which every
// gated API field they render is on by default, no older one (an older API server drops the
// webhook's matchConditions, so the operator's and the uninstall hook's own writes would go to a
// webhook that fails closed while the operator is scaled down), and no newer minimum than needed.
// Helm checks kubeVersion; Rancher's Apps & Marketplace reads the catalog.cattle.io/kube-version
// annotation, which says the same. The integration tests' API server is admitted.
func TestKubeVersionFollowsTheAPIs(t *testing.T) {
	min, gates := chartsMinimumKube(t)
	if len(gates) == 0 {
		t.Fatal("the charts use no gated field; the webhook's matchConditions at least were expected")
	}
	t.Logf("gated fields: %s; minimum Kubernetes %d.%d", strings.Join(gates, ", "), min.Major(), min.Minor())
	below := semver.MustParse(fmt.Sprintf("%d.%d.99", min.Major(), min.Minor()-1))
	atMin := semver.MustParse(fmt.Sprintf("%d.%d.0", min.Major(), min.Minor()))
	tested := semver.MustParse(strings.TrimPrefix(testKubeVersion, "v"))
	op, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	crd, err := Load(chartDir(CRDChart))
	if err != nil {
		t.Fatal(err)
	}
	if got := semver.MustParse(strings.TrimPrefix(MinKubeVersion, "v")); !got.Equal(atMin) {
		t.Errorf("MinKubeVersion %s; want %s", MinKubeVersion, atMin)
	}
	if _, err := Render(op, RenderOptions{Namespace: testNamespace, APIVersions: InstallAPIVersions(), KubeVersion: "v" + below.String()}); err == nil ||
		!strings.Contains(err.Error(), "incompatible with Kubernetes") {
		t.Errorf("rendered for Kubernetes %s: %v; want Helm's refusal", below, err)
	}
	for what, text := range map[string]string{
		OperatorChart + " kubeVersion":                    op.Metadata.KubeVersion,
		OperatorChart + " catalog.cattle.io/kube-version": op.Metadata.Annotations["catalog.cattle.io/kube-version"],
		CRDChart + " kubeVersion":                         crd.Metadata.KubeVersion,
	} {
		if text == "" {
			t.Errorf("%s is not set; want >= %s", what, atMin)
			continue
		}
		constraint, err := semver.NewConstraint(text)
		if err != nil {
			t.Errorf("%s %q: %v", what, text, err)
			continue
		}
		if constraint.Check(below) {
			t.Errorf("%s %q admits Kubernetes %s, older than %s needs", what, text, below, strings.Join(gates, ", "))
		}
		if !constraint.Check(atMin) {
			t.Errorf("%s %q refuses Kubernetes %s, which has every API the charts use", what, text, atMin)
		}
		if !constraint.Check(tested) {
			t.Errorf("%s %q refuses Kubernetes %s, the version the tests run", what, text, tested)
		}
	}
}

// TestDocumentedKubeVersion: every "Kubernetes 1.N or later" the README, docs/ and the chart's
// README and app-readme state is the charts' minimum.
func TestDocumentedKubeVersion(t *testing.T) {
	min, _ := chartsMinimumKube(t)
	want := fmt.Sprintf("%d.%d", min.Major(), min.Minor())
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(repoRoot, "README.md"),
		filepath.Join(chartDir(OperatorChart), "README.md"), filepath.Join(chartDir(OperatorChart), "app-readme.md"))
	stated := regexp.MustCompile(`Kubernetes\s+v?(1\.\d+)(?:\.\d+)?\s+or\s+(?:later|newer)`)
	found := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range stated.FindAllStringSubmatch(string(data), -1) {
			found++
			if m[1] != want {
				t.Errorf("%s: %q; the charts need Kubernetes %s or later", filepath.Base(f), m[0], want)
			}
		}
	}
	if found == 0 {
		t.Errorf("no prerequisite \"Kubernetes %s or later\" in the README or the chart's README", want)
	}
}
