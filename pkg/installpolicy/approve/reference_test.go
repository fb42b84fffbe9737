package approve

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/render"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// referenceWorld is one chart's reference render: the plan of the product's defaults (with the
// PodMonitor or without), and the objects of that render.
type referenceWorld struct {
	name   string
	chart  guestchart.Chart
	schema chartvalues.Schema
	// objects is what the values name the chart's objects.
	objects string
	base    []*Object
}

func referenceWorlds(t *testing.T) []referenceWorld {
	t.Helper()
	images, err := imagepolicy.New(map[guestchart.Chart][]string{
		guestchart.Kubevip: imagepolicy.DefaultKubevipImages(), guestchart.CloudProvider: imagepolicy.DefaultCloudProviderImages()}, "", false, false)
	if err != nil {
		t.Fatal(err)
	}
	schema := chartvalues.Schema{Images: images}
	var out []referenceWorld
	for _, c := range []struct {
		name   string
		chart  guestchart.Chart
		values string
	}{
		{"kube-vip", guestchart.Kubevip, config.DefaultKubevipChartValues},
		{"kube-vip with its PodMonitor", guestchart.Kubevip, config.DefaultKubevipChartValues + "podMonitor: {enabled: true}\n"},
		{"kube-vip-cloud-provider", guestchart.CloudProvider, config.DefaultKubevipCloudProviderChartValues},
	} {
		base, name, err := reference(schema, c.chart, chartrepo.Values(t, c.values))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		out = append(out, referenceWorld{c.name, c.chart, schema, name, base})
	}
	return out
}

// reference is the chart's own render for the given values with the product's defaults, decoded,
// as installpolicy.Plan renders it.
func reference(schema chartvalues.Schema, chart guestchart.Chart, given map[string]interface{}) ([]*Object, string, error) {
	defaults := config.Default().Kubevip.Values
	if chart == guestchart.CloudProvider {
		defaults = config.Default().KubevipCloudProvider.Values
	}
	v, err := schema.Check(chart, "values", given)
	if err != nil {
		return nil, "", err
	}
	baseline, err := schema.Baseline(chart, v, defaults)
	if err != nil {
		return nil, "", err
	}
	docs, err := render.New(nil, render.Budget{}).Render(chart, chartrepo.DefaultChart(chart), baseline, release(), "")
	if err != nil {
		return nil, "", err
	}
	objects, err := Decode(chart, docs)
	return objects, v.Name, err
}

// approved judges got against the world's reference.
func (w referenceWorld) approved(got []*Object) error {
	_, err := Judge(w.schema, w.chart, w.objects, release(), got, w.base)
	return err
}

func release() render.Target {
	return render.Target{Name: "kube-vip", Namespace: "kube-system", Revision: 1}
}

// mutated is base with object i's JSON replaced by doc, decoded as the API server decodes it; nil
// with the refusal of the decoding.
func mutated(w referenceWorld, i int, doc interface{}) ([]*Object, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	o, err := decode(w.chart, render.Doc{Template: w.base[i].template, Content: string(data)})
	if err != nil {
		return nil, err
	}
	got := make([]*Object, len(w.base))
	for k := range w.base {
		if k == i {
			got[k] = o
			continue
		}
		again, err := decode(w.chart, render.Doc{Template: w.base[k].template, Content: string(mustJSON(w.base[k].obj))})
		if err != nil {
			return nil, err
		}
		got[k] = again
	}
	return got, nil
}

func mustJSON(v interface{}) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// paths lists every place in a JSON document: each key of a mapping and each item of a list, with
// its parent, as the dotted path firstDifference names.
type place struct {
	path   string
	parent interface{}
	key    string // in a mapping
	index  int    // in a list
}

func places(v interface{}, at string, out *[]place) {
	switch x := v.(type) {
	case map[string]interface{}:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			p := chartvalues.JoinPath(at, k)
			*out = append(*out, place{path: p, parent: x, key: k, index: -1})
			places(x[k], p, out)
		}
	case []interface{}:
		for i := range x {
			p := fmt.Sprintf("%s[%d]", at, i)
			*out = append(*out, place{path: p, parent: x, index: i})
			places(x[i], p, out)
		}
	}
}

// variablePath reports whether path lies in one of the chart's variables for an object of kind.
func variablePath(chart guestchart.Chart, kind, path string) bool {
	for _, v := range Variables(chart) {
		if v.Kind == kind && (path == v.Path || strings.HasPrefix(path, v.Path+".") || strings.HasPrefix(path, v.Path+"[")) {
			return true
		}
	}
	return false
}

// otherValue is a value of the same JSON type as v that differs from it.
func otherValue(v interface{}) interface{} {
	switch x := v.(type) {
	case string:
		return x + "x"
	case bool:
		return !x
	case float64:
		return x + 1
	case map[string]interface{}:
		return map[string]interface{}{}
	case []interface{}:
		return []interface{}{}
	}
	return "x"
}

// TestEveryPlaceOutsideTheVariablesIsHeld is the property the reference holds: in every object
// the real charts (their stand-ins) render with the product's defaults, at every place that is
// not one of the variables, a field removed, a value changed or a field added — a label, an
// annotation, a name, a namespace, a capability, a security context — is refused. Each mutation
// is decoded as the API server decodes it first; one it reads as no change at all is not counted.
func TestEveryPlaceOutsideTheVariablesIsHeld(t *testing.T) {
	t.Parallel()
	tried, refused := 0, 0
	for _, w := range referenceWorlds(t) {
		same, err := mutated(w, 0, toJSON(w.base[0].obj))
		if err == nil {
			err = w.approved(same)
		}
		if err != nil {
			t.Fatalf("%s: the reference itself is refused: %v", w.name, err)
		}
		for i, o := range w.base {
			var ps []place
			places(toJSON(o.obj), "", &ps)
			for _, p := range ps {
				if variablePath(w.chart, o.kind.Kind, p.path) {
					continue
				}
				edits := map[string]func(doc interface{}) bool{
					"removed": func(doc interface{}) bool {
						return apply(doc, p, func(m map[string]interface{}) { delete(m, p.key) }, nil)
					},
					"changed": func(doc interface{}) bool {
						return apply(doc, p, func(m map[string]interface{}) { m[p.key] = otherValue(m[p.key]) },
							func(l []interface{}) { l[p.index] = otherValue(l[p.index]) })
					},
					"given a field more": func(doc interface{}) bool {
						return apply(doc, p, func(m map[string]interface{}) {
							if sub, ok := m[p.key].(map[string]interface{}); ok {
								sub["rbac.authorization.k8s.io/aggregate-to-admin"] = "true"
							}
						}, nil)
					},
				}
				for what, edit := range edits {
					doc := toJSON(o.obj)
					if !edit(doc) || firstDifference(doc, toJSON(o.obj), "") == "" {
						continue
					}
					got, err := mutated(w, i, doc)
					if err == nil {
						if again := toJSON(got[i].obj); firstDifference(again, toJSON(o.obj), "") == "" {
							continue // the API server would read no change
						}
						err = w.approved(got)
					}
					tried++
					if err == nil {
						t.Errorf("%s: %s %s %s was approved", w.name, o.kind.Kind, p.path, what)
						continue
					}
					refused++
				}
			}
		}
	}
	t.Logf("%d mutations outside the variables, %d refused", tried, refused)
	if tried < 100 {
		t.Errorf("only %d mutations were tried: the property looked at too little", tried)
	}
}

// apply edits the place p names in doc, a fresh copy of the document p was found in: through the
// mapping or the list that holds it. It reports whether it found the place.
func apply(doc interface{}, p place, inMap func(map[string]interface{}), inList func([]interface{})) bool {
	parent := at(doc, parentPath(p.path))
	switch x := parent.(type) {
	case map[string]interface{}:
		if _, ok := x[p.key]; ok && p.index < 0 && inMap != nil {
			inMap(x)
			return true
		}
	case []interface{}:
		if p.index >= 0 && p.index < len(x) && inList != nil {
			inList(x)
			return true
		}
	}
	return false
}

// parentPath is the path of what holds path: "a.b[2]" is held by "a.b", "a.b" by "a".
func parentPath(path string) string {
	if strings.HasSuffix(path, "]") {
		return path[:strings.LastIndex(path, "[")]
	}
	if i := strings.LastIndex(path, "."); i >= 0 {
		return path[:i]
	}
	return ""
}

// at finds the value at a dotted path with list indexes.
func at(doc interface{}, path string) interface{} {
	if path == "" {
		return doc
	}
	var out []place
	places(doc, "", &out)
	for _, p := range out {
		if p.path != path {
			continue
		}
		switch x := p.parent.(type) {
		case map[string]interface{}:
			return x[p.key]
		case []interface{}:
			return x[p.index]
		}
	}
	return nil
}

// TestTheVariablesTakeTheirClassOnly: at the variables, values of their class are approved and
// others refused, the environment included: kube-vip's variables of a mode the deployment does not
// allow, a variable of the reference removed or filled from a Secret, the provider told another
// ConfigMap.
func TestTheVariablesTakeTheirClassOnly(t *testing.T) {
	t.Parallel()
	worlds := referenceWorlds(t)
	container := func(doc interface{}) map[string]interface{} {
		return at(doc, "spec.template.spec.containers[0]").(map[string]interface{})
	}
	setEnv := func(doc interface{}, name string, value interface{}) {
		c := container(doc)
		env, _ := c["env"].([]interface{})
		for _, e := range env {
			if e.(map[string]interface{})["name"] == name {
				e.(map[string]interface{})["value"] = value
				return
			}
		}
		c["env"] = append(env, map[string]interface{}{"name": name, "value": value})
	}
	dropEnv := func(doc interface{}, name string) {
		c := container(doc)
		var kept []interface{}
		for _, e := range c["env"].([]interface{}) {
			if e.(map[string]interface{})["name"] != name {
				kept = append(kept, e)
			}
		}
		c["env"] = kept
	}
	podSpec := func(doc interface{}) map[string]interface{} {
		return at(doc, "spec.template.spec").(map[string]interface{})
	}
	cases := []struct {
		world int
		name  string
		edit  func(doc interface{})
		ok    bool
	}{
		{0, "another interface", func(d interface{}) { setEnv(d, "vip_interface", "eth0") }, true},
		{0, "per-Service election", func(d interface{}) { setEnv(d, "svc_election", "true") }, true},
		{0, "another release of the image", func(d interface{}) { container(d)["image"] = "ghcr.io/kube-vip/kube-vip:v1.0.4" }, true},
		{0, "a node selector and tolerations", func(d interface{}) {
			podSpec(d)["nodeSelector"] = map[string]interface{}{"node-role.kubernetes.io/control-plane": "true"}
			podSpec(d)["tolerations"] = []interface{}{map[string]interface{}{"operator": "Exists"}}
		}, true},
		{0, "resources", func(d interface{}) {
			container(d)["resources"] = map[string]interface{}{"limits": map[string]interface{}{"memory": "64Mi"}}
		}, true},
		{0, "the routing table mode", func(d interface{}) { setEnv(d, "vip_routingtable", "true") }, false},
		{0, "the node's main table", func(d interface{}) { setEnv(d, "vip_routingtableid", "254") }, false},
		{0, "another component's Lease", func(d interface{}) { setEnv(d, "svc_leasename", "kube-scheduler") }, false},
		{0, "ARP off", func(d interface{}) { setEnv(d, "vip_arp", "false") }, false},
		{0, "a reference variable removed", func(d interface{}) { dropEnv(d, "vip_arp") }, false},
		{0, "a variable given twice", func(d interface{}) {
			c := container(d)
			c["env"] = append(c["env"].([]interface{}), map[string]interface{}{"name": "vip_arp", "value": "false"})
		}, false},
		{0, "a variable from a Secret", func(d interface{}) {
			c := container(d)
			c["env"] = append(c["env"].([]interface{}), map[string]interface{}{"name": "bgp_peerpass",
				"valueFrom": map[string]interface{}{"secretKeyRef": map[string]interface{}{"name": "x", "key": "y"}}})
		}, false},
		{0, "a control-plane variable filled from the pod", func(d interface{}) {
			c := container(d)
			c["env"] = append(c["env"].([]interface{}), map[string]interface{}{"name": "vip_address",
				"valueFrom": map[string]interface{}{"fieldRef": map[string]interface{}{"fieldPath": "status.podIP"}}})
		}, false},
		{0, "an image of another repository", func(d interface{}) { container(d)["image"] = "docker.io/library/alpine:3" }, false},
		{0, "a priority class", func(d interface{}) { podSpec(d)["priorityClassName"] = "system-node-critical" }, false},
		{0, "a pod label", func(d interface{}) {
			at(d, "spec.template.metadata.labels").(map[string]interface{})["app"] = "ingress-nginx"
		}, false},
		{1, "the monitoring port moved with prometheus_server", func(d interface{}) {
			setEnv(d, "prometheus_server", ":9100")
			container(d)["ports"].([]interface{})[0].(map[string]interface{})["containerPort"] = float64(9100)
		}, true},
		{1, "a monitoring port that is not prometheus_server's", func(d interface{}) {
			container(d)["ports"].([]interface{})[0].(map[string]interface{})["containerPort"] = float64(22)
		}, false},
		{2, "replicas", func(d interface{}) { at(d, "spec").(map[string]interface{})["replicas"] = float64(3) }, true},
		{2, "the load-balancer class switch", func(d interface{}) { setEnv(d, "KUBEVIP_ENABLE_LOADBALANCERCLASS", "true") }, true},
		{2, "another ConfigMap for the provider", func(d interface{}) { setEnv(d, "KUBEVIP_CONFIG_MAP", "coredns") }, false},
		{2, "too many replicas", func(d interface{}) { at(d, "spec").(map[string]interface{})["replicas"] = float64(50) }, false},
	}
	for _, c := range cases {
		w := worlds[c.world]
		i := workloadIndex(t, w)
		doc := toJSON(w.base[i].obj)
		c.edit(doc)
		got, err := mutated(w, i, doc)
		if err == nil {
			err = w.approved(got)
		}
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: %s: refused: %v", w.name, c.name, err)
		case !c.ok && err == nil:
			t.Errorf("%s: %s: approved", w.name, c.name)
		}
	}
}

func workloadIndex(t *testing.T, w referenceWorld) int {
	t.Helper()
	for i, o := range w.base {
		if o.kind.Kind == "DaemonSet" || o.kind.Kind == "Deployment" {
			return i
		}
	}
	t.Fatalf("%s renders no workload", w.name)
	return -1
}
