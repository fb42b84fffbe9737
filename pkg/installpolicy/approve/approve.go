package approve

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/kubevipenv"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/render"
)

// Approval is what the policy approved of one install or upgrade: the manifest is all Helm is to
// apply.
type Approval struct {
	// Manifest is the approved objects, serialised again from their typed form.
	Manifest string
	// Digest is "sha256:<hex>" of Manifest: what the management side remembers of a release.
	Digest string
	// Objects are the approved objects; Owned every object the chart may own in the guest (its
	// kinds under its name), which is what an upgrade may delete when it renders one no more.
	Objects []ObjectRef
	Owned   []ObjectRef
	// Decisions are what the kube-vip environment judge made of each kube-vip container.
	Decisions []kubevipenv.Decision
}

// Judge judges the objects chart rendered for rel with values that name its objects name against
// base, those of the chart's own render with the product's defaults (the reference), and returns
// the approved manifest, or a *guestchart.Refusal (ReasonRenderRefused, ReasonKubevipRefused).
func Judge(schema chartvalues.Schema, chart guestchart.Chart, name string, rel render.Target, got, base []*Object) (*Approval, error) {
	j := &judge{schema: schema, chart: chart, namespace: rel.Namespace, name: name}
	baseByKey := map[string]*Object{}
	for _, o := range base {
		baseByKey[keyOf(o)] = o
	}
	a := &Approval{Owned: Owned(chart, rel.Namespace)}
	var docs []string
	for _, o := range got {
		b, ok := baseByKey[keyOf(o)]
		if !ok {
			return nil, j.deny(o, "the chart's own render with the product's defaults has no such object: a value changed which objects there are")
		}
		delete(baseByKey, keyOf(o))
		// Against the reference, as rendered; then kube-vip's environment is translated for its
		// image.
		if err := j.againstReference(o, b); err != nil {
			return nil, err
		}
		if err := j.identity(o); err != nil {
			return nil, err
		}
		if err := j.kubevipEnv(o); err != nil {
			return nil, err
		}
		doc, err := canonical(o.obj)
		if err != nil {
			return nil, err
		}
		docs = append(docs, string(doc))
		a.Objects = append(a.Objects, o.kind.ref(o.meta.GetNamespace(), o.meta.GetName()))
	}
	for _, missing := range baseByKey {
		return nil, guestchart.Refuse(guestchart.ReasonRenderRefused, "", "the %s chart does not render %s %s with these values, as it does with the product's defaults",
			chart, missing.kind.Kind, missing.meta.GetName())
	}
	a.Manifest = "---\n" + strings.Join(docs, "---\n")
	a.Digest = guestchart.Digest([]byte(a.Manifest))
	a.Decisions = j.decisions
	return a, nil
}

func keyOf(o *Object) string {
	return o.kind.Kind + " " + o.meta.GetNamespace() + "/" + o.meta.GetName()
}

// canonical serialises an approved object: its typed form as JSON, without status and empty
// timestamps, as YAML. What Helm applies is this, not the chart's text.
func canonical(obj runtime.Object) ([]byte, error) {
	m, ok := toJSON(obj).(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("a %T does not serialise as an object", obj)
	}
	delete(m, "status")
	return yaml.Marshal(Prune(m))
}

// Prune drops the nulls a typed object marshals to (creationTimestamp: null), at every depth of
// its JSON form, and returns v.
func Prune(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, x := range t {
			if x == nil {
				delete(t, k)
				continue
			}
			t[k] = Prune(x)
		}
	case []interface{}:
		for i := range t {
			t[i] = Prune(t[i])
		}
	}
	return v
}
