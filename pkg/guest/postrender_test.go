package guest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
	out, err := Judged{Judge: func(workload string, c *corev1.Container) error {
		seen = append(seen, workload+"/"+c.Name)
		c.Env = nil
		return nil
	}}.Run(bytes.NewBufferString(rendered))
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != "DaemonSet kube-system/kube-vip/kube-vip" {
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
	if _, err := (Judged{Judge: func(string, *corev1.Container) error { return refusal }}).Run(bytes.NewBufferString(rendered)); !errors.Is(err, refusal) {
		t.Errorf("a refusal gave %v", err)
	}
	if _, err := (Judged{Judge: func(string, *corev1.Container) error { return nil }}).Run(bytes.NewBufferString("kind: [")); err == nil {
		t.Error("a document that is not YAML was passed on")
	}
}
