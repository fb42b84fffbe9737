package installpolicy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Plan is one chart as kube-fip-config asks to install it, with values the schema accepted.
type Plan struct {
	policy  Policy
	Chart   Chart
	Version string
	// Values are what Helm is given.
	Values Values
	// baseline are the operator's default values for the chart, named as Values name the objects:
	// what a render with Values may differ from only where the schema allows.
	baseline map[string]interface{}
}

// NewPlan checks the values kube-fip-config gives chart under key, and the operator's defaults
// for it (config's, which the schema accepts by construction). version is the chart version asked
// for, "" for the newest.
func (p Policy) NewPlan(chart Chart, key, version string, values, defaults map[string]interface{}) (*Plan, error) {
	v, err := p.CheckValues(chart, key, values)
	if err != nil {
		return nil, err
	}
	// The baseline's image is whatever the chart defaults to: images are judged on their own, and
	// a deployment that allows only its mirror still compares with the operator's defaults. Under
	// a registry it is the pinned image moved there, as every value is, so that the reference is
	// what the deployment allows. The baseline is the product's, never refused for want of a digest.
	withoutImage := make(map[string]interface{}, len(defaults))
	for k, v := range defaults {
		if k != "image" || p.registry != "" {
			withoutImage[k] = v
		}
	}
	base := p
	base.requireDigest = false
	d, err := base.CheckValues(chart, "", withoutImage)
	if err != nil {
		return nil, fmt.Errorf("the operator's default values of the %s chart are refused: %w", chart, err)
	}
	baseline := d.Map
	// The reference renders the PodMonitor when the configuration does: whether it exists is the
	// one switch a value has over which objects there are.
	if pm, ok := v.Map["podMonitor"].(map[string]interface{}); ok && pm["enabled"] == true {
		baseline["podMonitor"] = map[string]interface{}{"enabled": true}
	}
	return &Plan{policy: p, Chart: chart, Version: version, Values: v, baseline: baseline}, nil
}

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
	Decisions []Decision
}

// Approve renders ch for rel with the plan's values and with the operator's defaults, and judges
// every object. It returns the approved manifest, or a *Refusal (ReasonChartRefused,
// ReasonRenderRefused, ReasonKubevipRefused) or a *TemplateError.
func (pl *Plan) Approve(ch *helmchart.Chart, rel Target) (*Approval, error) {
	if err := CheckChart(pl.Chart, ch, pl.Version); err != nil {
		return nil, err
	}
	got, err := pl.objects(ch, pl.Values.Map, rel)
	if err != nil {
		return nil, err
	}
	base, err := pl.objects(ch, pl.baseline, rel)
	if err != nil {
		return nil, fmt.Errorf("with the operator's default values: %w", err)
	}
	return pl.approve(got, base, rel)
}

// approve judges the objects a render with the plan's values gives against base, those of the
// reference render.
func (pl *Plan) approve(got, base []*object, rel Target) (*Approval, error) {
	j := &judge{policy: pl.policy, chart: pl.Chart, release: rel.Name, namespace: rel.Namespace, name: pl.Values.Name}
	baseByKey := map[string]*object{}
	for _, o := range base {
		baseByKey[keyOf(o)] = o
	}
	a := &Approval{Owned: pl.owned(rel.Namespace)}
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
		a.Objects = append(a.Objects, refOf(o.gvk, o.meta.GetNamespace(), o.meta.GetName()))
	}
	for _, missing := range baseByKey {
		return nil, refuse(ReasonRenderRefused, "", "the %s chart does not render %s %s with these values, as it does with the product's defaults",
			pl.Chart, missing.gvk.Kind, missing.meta.GetName())
	}
	a.Manifest = "---\n" + strings.Join(docs, "---\n")
	sum := sha256.Sum256([]byte(a.Manifest))
	a.Digest = "sha256:" + hex.EncodeToString(sum[:])
	a.Decisions = j.decisions
	return a, nil
}

// objects renders and decodes the chart's documents.
func (pl *Plan) objects(ch *helmchart.Chart, values map[string]interface{}, rel Target) ([]*object, error) {
	docs, err := pl.policy.render(pl.Chart, ch, values, rel)
	if err != nil {
		return nil, err
	}
	var out []*object
	for _, d := range docs {
		o, err := decode(pl.Chart, d)
		if err != nil {
			return nil, err
		}
		if o != nil {
			out = append(out, o)
		}
	}
	return out, nil
}

func keyOf(o *object) string {
	return o.gvk.Kind + " " + o.meta.GetNamespace() + "/" + o.meta.GetName()
}

// canonical serialises an approved object: its typed form as JSON, without status and empty
// timestamps, as YAML. What Helm applies is this, not the chart's text.
func canonical(obj runtime.Object) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]interface{}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	return yaml.Marshal(prune(m))
}

// prune drops the nulls a typed object marshals to (creationTimestamp: null).
func prune(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, x := range t {
			if x == nil {
				delete(t, k)
				continue
			}
			t[k] = prune(x)
		}
	case []interface{}:
		for i := range t {
			t[i] = prune(t[i])
		}
	}
	return v
}
