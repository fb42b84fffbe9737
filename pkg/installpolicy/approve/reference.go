package approve

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
)

// A render is held to its reference: the same chart, whose digest the deployment allows, rendered
// for the same release with the product's default values. An object may differ from its reference
// only at the places Variables names, and there only with a value the place's check allows.
// Everything else must be exactly as in the reference: labels and annotations like any field, and
// a field the reference has and the render lacks (a security context, a capability dropped) is a
// difference like any other. Adding a value the operator supports is its schema entry (package
// values) and its Variable here.

// Variable is one place where a render may differ from its reference, and what it may hold there.
type Variable struct {
	Kind, Path, Takes string
	clear             func(runtime.Object)
	// check judges what the render holds at the place; ref is the same object of the reference.
	check func(j *judge, got, ref runtime.Object) error
}

// Variables are the places where what kube-fip-config asks for may change what a chart renders,
// for the table in docs/security.md.
func Variables(chart guestchart.Chart) []Variable {
	pod := func(path, takes string, clear func(*corev1.PodSpec), check func(s *corev1.PodSpec) error) Variable {
		return Variable{Kind: workloadKind(chart), Path: "spec.template.spec." + path, Takes: takes,
			clear: func(o runtime.Object) {
				if t := podTemplate(o); t != nil {
					clear(&t.Spec)
				}
			},
			check: func(_ *judge, got, _ runtime.Object) error {
				if t := podTemplate(got); t != nil {
					return check(&t.Spec)
				}
				return nil
			}}
	}
	container := func(path, takes string, clear func(*corev1.Container), check func(j *judge, c, ref *corev1.Container) error) Variable {
		v := pod("containers[0]."+path, takes, func(s *corev1.PodSpec) {
			for i := range s.Containers {
				clear(&s.Containers[i])
			}
		}, nil)
		// The reference holds the containers' number and names: what differs is within each.
		v.check = func(j *judge, got, ref runtime.Object) error {
			t, r := podTemplate(got), podTemplate(ref)
			if t == nil || r == nil || len(t.Spec.Containers) != len(r.Spec.Containers) {
				return nil
			}
			for i := range t.Spec.Containers {
				if err := check(j, &t.Spec.Containers[i], &r.Spec.Containers[i]); err != nil {
					return err
				}
			}
			return nil
		}
		return v
	}
	vars := []Variable{
		container("image", "an allowed image repository of the chart (under a registry, the pinned one there), with a release tag (for kube-vip of a generation the operator knows), pinned by digest where the deployment requires digests",
			func(c *corev1.Container) { c.Image = "" },
			func(j *judge, c, _ *corev1.Container) error { return j.schema.Images.CheckRendered(chart, c.Image) }),
		container("imagePullPolicy", "Always, IfNotPresent or Never", func(c *corev1.Container) { c.ImagePullPolicy = "" },
			func(_ *judge, c, _ *corev1.Container) error {
				return imagepolicy.CheckPullPolicy(string(c.ImagePullPolicy))
			}),
		container("resources", "requests and limits of cpu, memory and ephemeral-storage", func(c *corev1.Container) { c.Resources = corev1.ResourceRequirements{} },
			func(_ *judge, c, _ *corev1.Container) error {
				return (&chartvalues.Scheduling{Resources: &c.Resources}).Validate()
			}),
		pod("nodeSelector", "label keys and values", func(s *corev1.PodSpec) { s.NodeSelector = nil },
			func(s *corev1.PodSpec) error {
				return (&chartvalues.Scheduling{NodeSelector: s.NodeSelector}).Validate()
			}),
		pod("tolerations", "Kubernetes tolerations", func(s *corev1.PodSpec) { s.Tolerations = nil },
			func(s *corev1.PodSpec) error { return (&chartvalues.Scheduling{Tolerations: s.Tolerations}).Validate() }),
		pod("affinity", "node affinity, pod affinity and anti-affinity", func(s *corev1.PodSpec) { s.Affinity = nil },
			func(s *corev1.PodSpec) error { return (&chartvalues.Scheduling{Affinity: s.Affinity}).Validate() }),
		pod("imagePullSecrets", "names of Secrets of the release's namespace", func(s *corev1.PodSpec) { s.ImagePullSecrets = nil },
			func(s *corev1.PodSpec) error {
				return (&chartvalues.Scheduling{ImagePullSecrets: s.ImagePullSecrets}).Validate()
			}),
	}
	env := func(takes string) Variable {
		return container("env", takes, func(c *corev1.Container) { c.Env = nil },
			func(j *judge, c, ref *corev1.Container) error { return j.referenceEnv(c.Env, ref.Env) })
	}
	switch chart {
	case guestchart.Kubevip:
		vars = append(vars,
			env("the reference's variables and further ones of the kube-vip allow-list, each changed only to a value of its class; "+
				"valueFrom only where the reference has it, or the pod's address for bgp_routerid and bgp_sourceip"),
			container("ports", "the monitoring port alone (podMonitor.enabled), at the port of env prometheus_server",
				func(c *corev1.Container) { c.Ports = nil },
				func(_ *judge, c, _ *corev1.Container) error {
					for _, p := range c.Ports {
						if err := chartvalues.CheckMonitoringPort(c.Env, p); err != nil {
							return err
						}
					}
					return nil
				}),
			object("DaemonSet", "spec.updateStrategy", "RollingUpdate (with maxUnavailable, maxSurge) or OnDelete",
				func(d *appsv1.DaemonSet) { d.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{} },
				func(d *appsv1.DaemonSet) error { return chartvalues.CheckUpdateStrategy(&d.Spec.UpdateStrategy) }),
			object("PodMonitor", "metadata.labels", "label keys and values", func(p *podMonitor) { p.Labels = nil },
				func(p *podMonitor) error { return chartvalues.CheckLabels("metadata.labels", p.Labels) }))
	case guestchart.CloudProvider:
		vars = append(vars,
			env("the reference's variables, and KUBEVIP_ENABLE_LOADBALANCERCLASS: \"true\" (enableloadbalancerClass)"),
			object("Deployment", "spec.replicas", "1 to 5", func(d *appsv1.Deployment) { d.Spec.Replicas = nil },
				func(d *appsv1.Deployment) error {
					if r := d.Spec.Replicas; r != nil && (*r < 1 || *r > 5) {
						return fmt.Errorf("%d: 1 to 5", *r)
					}
					return nil
				}))
	}
	return vars
}

// object is a Variable of the objects of type T, named kind.
func object[T runtime.Object](kind, path, takes string, clear func(T), check func(T) error) Variable {
	return Variable{Kind: kind, Path: path, Takes: takes,
		clear: func(o runtime.Object) {
			if t, ok := o.(T); ok {
				clear(t)
			}
		},
		check: func(_ *judge, o, _ runtime.Object) error {
			if t, ok := o.(T); ok {
				return check(t)
			}
			return nil
		}}
}

func workloadKind(chart guestchart.Chart) string {
	if chart == guestchart.Kubevip {
		return "DaemonSet"
	}
	return "Deployment"
}

func podTemplate(o runtime.Object) *corev1.PodTemplateSpec {
	switch w := o.(type) {
	case *appsv1.DaemonSet:
		return &w.Spec.Template
	case *appsv1.Deployment:
		return &w.Spec.Template
	}
	return nil
}

// againstReference judges got against ref, the same object of the reference render: equal
// outside the variables, and at each variable a value its check allows.
func (j *judge) againstReference(got, ref *Object) error {
	vars := Variables(j.chart)
	a, b := got.obj.DeepCopyObject(), ref.obj.DeepCopyObject()
	for _, v := range vars {
		v.clear(a)
		v.clear(b)
	}
	if d := firstDifference(toJSON(a), toJSON(b), ""); d != "" {
		return j.deny(got, "%s differs from the chart's own render with the product's defaults, and no value the operator supports may change it", d)
	}
	for _, v := range vars {
		if v.Kind != got.kind.Kind {
			continue
		}
		if err := v.check(j, got.obj, ref.obj); err != nil {
			return j.deny(got, "%s: %v", v.Path, err)
		}
	}
	return nil
}

// referenceEnv allows a container's environment that keeps every variable of the reference, each
// as it is or changed to a value its rule allows, and adds only variables of the allow-list: for
// kube-vip the rules of the modes the deployment allows, for the provider its load-balancer class
// switch. A variable given twice is refused: the kubelet would take the last.
func (j *judge) referenceEnv(got, ref []corev1.EnvVar) error {
	byName := map[string]corev1.EnvVar{}
	for _, e := range got {
		if _, twice := byName[e.Name]; twice {
			return fmt.Errorf("%s is given twice", guestchart.Shorten(e.Name))
		}
		byName[e.Name] = e
	}
	refByName := map[string]corev1.EnvVar{}
	for _, r := range ref {
		refByName[r.Name] = r
		if _, ok := byName[r.Name]; !ok {
			return fmt.Errorf("%s, which the chart's own render sets, is missing", r.Name)
		}
	}
	for _, e := range got {
		if r, ok := refByName[e.Name]; ok && reflect.DeepEqual(e, r) {
			continue
		}
		if err := j.changedEnv(e); err != nil {
			return err
		}
	}
	return nil
}

// changedEnv judges one variable that is not as in the reference.
func (j *judge) changedEnv(e corev1.EnvVar) error {
	if j.chart == guestchart.CloudProvider {
		if e.Name == "KUBEVIP_ENABLE_LOADBALANCERCLASS" && e.Value == "true" && e.ValueFrom == nil {
			return nil
		}
		return fmt.Errorf("%s is not a variable the chart sets, with a value it sets", guestchart.Shorten(e.Name))
	}
	return j.schema.CheckEnvVar(e)
}

func toJSON(v interface{}) interface{} {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out interface{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil
	}
	return out
}

// firstDifference returns the first path, in key order, where a and b differ.
func firstDifference(a, b interface{}, at string) string {
	switch x := a.(type) {
	case map[string]interface{}:
		y, ok := b.(map[string]interface{})
		if !ok {
			return orRoot(at)
		}
		keys := map[string]interface{}{}
		maps.Copy(keys, x)
		maps.Copy(keys, y)
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			if d := firstDifference(x[k], y[k], chartvalues.JoinPath(at, k)); d != "" {
				return d
			}
		}
		return ""
	case []interface{}:
		y, ok := b.([]interface{})
		if !ok || len(x) != len(y) {
			return orRoot(at)
		}
		for i := range x {
			if d := firstDifference(x[i], y[i], fmt.Sprintf("%s[%d]", at, i)); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(a, b) {
		return orRoot(at)
	}
	return ""
}

func orRoot(at string) string {
	if at == "" {
		return "the whole object"
	}
	return at
}
