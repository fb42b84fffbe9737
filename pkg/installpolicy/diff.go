package installpolicy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// differs compares an object rendered with the configuration's values to the same object rendered
// with the operator's defaults. Only the paths the values schema reaches may differ (masked);
// anything else that differs is a value that reshaped the object, and it returns the first such
// path, or "".
func (j *judge) differs(got, base runtime.Object) string {
	a, b := j.masked(got), j.masked(base)
	return firstDifference(toJSON(a), toJSON(b), "")
}

// masked is a copy of obj without the paths the values schema reaches: the image, pull policy,
// environment, resources and ports of the container; where the pod is scheduled; the pod labels
// beside the selector's (extraLabels); the update strategy and replica count; the PodMonitor's
// labels.
func (j *judge) masked(obj runtime.Object) runtime.Object {
	c := obj.DeepCopyObject()
	switch w := c.(type) {
	case *appsv1.DaemonSet:
		w.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{}
		j.maskPod(&w.Spec.Template)
	case *appsv1.Deployment:
		w.Spec.Replicas = nil
		j.maskPod(&w.Spec.Template)
	case *podMonitor:
		w.Labels = nil
	}
	return c
}

func (j *judge) maskPod(t *corev1.PodTemplateSpec) {
	kept := map[string]string{}
	for k := range j.selector() {
		if v, ok := t.Labels[k]; ok {
			kept[k] = v
		}
	}
	t.Labels = kept
	s := &t.Spec
	s.NodeSelector, s.Tolerations, s.Affinity, s.PriorityClassName, s.ImagePullSecrets = nil, nil, nil, "", nil
	for i := range s.Containers {
		c := &s.Containers[i]
		c.Image, c.ImagePullPolicy, c.Env, c.Resources, c.Ports = "", "", nil, corev1.ResourceRequirements{}, nil
	}
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
		keys := map[string]bool{}
		for k := range x {
			keys[k] = true
		}
		for k := range y {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			if d := firstDifference(x[k], y[k], join(at, k)); d != "" {
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
