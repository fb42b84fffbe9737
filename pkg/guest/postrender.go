package guest

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// ObjectJudge looks at one object Helm rendered, before anything is applied. obj is the typed
// object for the kinds client-go knows, else nil, with kind and apiVersion always given. It may
// change a typed object in place; an error refuses the whole release.
type ObjectJudge func(apiVersion, kind string, obj runtime.Object) error

// Judged is a Helm post-renderer: every object Helm renders is shown to Judge, and an object the
// judge changed is rendered again. The other documents pass byte for byte.
type Judged struct {
	Judge ObjectJudge
	// Done, when set, judges the objects together once each was judged alone (a binding of a
	// role the release does not render, say); an error refuses the whole release.
	Done func() error
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
	if j.Done != nil {
		if err := j.Done(); err != nil {
			return nil, &Refused{Err: err}
		}
	}
	return out, nil
}

// judge returns the document rendered again when the judge changed it, nil when it stays as it is.
func (j Judged) judge(doc []byte) ([]byte, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, fmt.Errorf("the chart rendered a document that is not YAML: %w", err)
	}
	if head.Kind == "" && strings.TrimSpace(stripComments(doc)) == "" {
		return nil, nil
	}
	gvk := fmt.Sprintf("%s, Kind=%s", head.APIVersion, head.Kind)
	obj, known := newTyped(head.APIVersion, head.Kind)
	if !known {
		if err := j.Judge(head.APIVersion, head.Kind, nil); err != nil {
			return nil, &Refused{Err: err}
		}
		return nil, nil
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("the chart rendered a %s that does not parse: %w", gvk, err)
	}
	before, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if err := j.Judge(head.APIVersion, head.Kind, obj); err != nil {
		return nil, &Refused{Err: err}
	}
	after, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(before, after) {
		return nil, nil
	}
	return after, nil
}

// newTyped returns an empty object of a kind client-go knows.
func newTyped(apiVersion, kind string) (runtime.Object, bool) {
	gv, err := schemaGroupVersion(apiVersion)
	if err != nil {
		return nil, false
	}
	obj, err := scheme.Scheme.New(gv.WithKind(kind))
	return obj, err == nil
}

// stripComments drops the "# Source:" lines and other comments Helm writes between documents.
func stripComments(doc []byte) string {
	var b strings.Builder
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}

func schemaGroupVersion(apiVersion string) (schema.GroupVersion, error) {
	return schema.ParseGroupVersion(apiVersion)
}
