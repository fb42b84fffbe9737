package guest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

const rendered = `---
# Source: kube-vip/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: kept
data:
  text: "exactly as rendered"
---
# Source: kube-vip/templates/daemonset.yaml
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-vip
  namespace: kube-system
spec:
  template:
    spec:
      containers:
      - name: kube-vip
        image: ghcr.io/kube-vip/kube-vip:v1.0.0
        env:
        - name: vip_subnet
          value: "32"
`

// TestJudgedPostRenderer: every DaemonSet container is shown to the judge; a change is rendered
// again, the other documents pass byte for byte, and a refusal or a document that is not YAML
// stops the install.
func TestJudgedPostRenderer(t *testing.T) {
	var seen []string
	out, err := Judged{Judge: func(apiVersion, kind string, obj runtime.Object) error {
		seen = append(seen, apiVersion+" "+kind)
		if ds, ok := obj.(*appsv1.DaemonSet); ok {
			ds.Spec.Template.Spec.Containers[0].Env = nil
		}
		return nil
	}}.Run(bytes.NewBufferString(rendered))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "v1 ConfigMap,apps/v1 DaemonSet" {
		t.Errorf("the judge saw %q", seen)
	}
	if !strings.Contains(out.String(), "# Source: kube-vip/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap") ||
		!strings.Contains(out.String(), `text: "exactly as rendered"`) {
		t.Errorf("the ConfigMap was not passed as rendered:\n%s", out)
	}
	if strings.Contains(out.String(), "vip_subnet") {
		t.Errorf("the judge's change is not rendered:\n%s", out)
	}
	for _, doc := range documentSeparator.Split(out.String(), -1) {
		var m map[string]interface{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Errorf("a rendered document does not parse: %v\n%s", err, doc)
		}
	}

	refusal := errors.New("refused")
	if _, err := (Judged{Judge: func(string, string, runtime.Object) error { return refusal }}).Run(bytes.NewBufferString(rendered)); !errors.Is(err, refusal) {
		t.Errorf("a refusal gave %v", err)
	}
	if _, err := (Judged{Judge: func(string, string, runtime.Object) error { return nil }}).Run(bytes.NewBufferString("kind: [")); err == nil {
		t.Error("a document that is not YAML was passed on")
	}
}

// TestTemplateErrorsQuoteNoValues: a chart that fails to render is reported by template and line;
// the engine's message, which quotes the values, is not passed on. A judge's refusal is passed on
// as it is.
func TestTemplateErrorsQuoteNoValues(t *testing.T) {
	c := &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: "v2", Name: "demo", Version: "1.0.0"},
		Templates: []*chart.File{{Name: "templates/args.yaml", Data: []byte("args:\n- {{ required (printf \"--password=%s is not enough\" .Values.password) .Values.missing }}\n")}},
	}
	values, err := chartutil.ToRenderValues(c, map[string]interface{}{"password": "S3CRET"}, chartutil.ReleaseOptions{Name: "demo", Namespace: "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = engine.Render(c, values)
	if err == nil || !strings.Contains(err.Error(), "S3CRET") {
		t.Fatalf("the engine's own error %v does not show the problem this guards against", err)
	}
	reduced := withoutValues(err)
	if strings.Contains(reduced.Error(), "S3CRET") || !strings.Contains(reduced.Error(), "demo/templates/args.yaml line 2") {
		t.Errorf("reduced to %q; want the template and line, and no value", reduced)
	}
	refusal := &Refused{Err: errors.New("template: looks like one:1 but is a judgement")}
	// The very value comes back, not one that wraps it.
	if got := withoutValues(refusal); got != error(refusal) { //nolint:errorlint // identity is what is asserted
		t.Errorf("a refusal became %v", got)
	}
}
