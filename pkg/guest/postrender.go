package guest

import (
	"bytes"
	"fmt"
	"regexp"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// ContainerJudge looks at one container of a rendered workload before anything is applied. It may
// change the container in place; an error refuses the whole release.
type ContainerJudge func(workload string, c *corev1.Container) error

// Judged is a Helm post-renderer: every DaemonSet Helm renders has each of its containers shown to
// Judge, and a DaemonSet the judge changed is rendered again. The other objects pass unchanged.
type Judged struct {
	Judge ContainerJudge
}

// Refused is the judge's refusal of a rendered object, as the install returns it.
type Refused struct{ Err error }

func (r *Refused) Error() string { return r.Err.Error() }
func (r *Refused) Unwrap() error { return r.Err }

// documentSeparator splits a rendered manifest stream as Helm writes it.
var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// Run implements Helm's postrender.PostRenderer.
func (j Judged) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	out := new(bytes.Buffer)
	for _, doc := range documentSeparator.Split(rendered.String(), -1) {
		changed, err := j.judge([]byte(doc))
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		if changed != nil {
			out.Write(changed)
		} else {
			out.WriteString(doc)
		}
		out.WriteString("\n")
	}
	return out, nil
}

// judge returns the document rendered again when the judge changed it, nil when it stays as it is.
func (j Judged) judge(doc []byte) ([]byte, error) {
	var head struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, fmt.Errorf("the chart rendered a document that is not YAML: %w", err)
	}
	if head.Kind != "DaemonSet" {
		return nil, nil
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(doc, &ds); err != nil {
		return nil, fmt.Errorf("the chart rendered a DaemonSet that does not parse: %w", err)
	}
	before, err := yaml.Marshal(&ds)
	if err != nil {
		return nil, err
	}
	workload := "DaemonSet " + ds.Namespace + "/" + ds.Name
	for i := range ds.Spec.Template.Spec.Containers {
		if err := j.Judge(workload, &ds.Spec.Template.Spec.Containers[i]); err != nil {
			return nil, &Refused{Err: err}
		}
	}
	after, err := yaml.Marshal(&ds)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(before, after) {
		return nil, nil
	}
	return after, nil
}
