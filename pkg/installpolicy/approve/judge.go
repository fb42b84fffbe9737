package approve

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/kubevipenv"
)

// judge holds what one approval judges every rendered object against: the chart, the release,
// and the name the values give the chart's objects.
type judge struct {
	schema    chartvalues.Schema
	chart     guestchart.Chart
	namespace string
	// name is what the chart names every object (values' nameOverride, or the chart's name).
	name string
	// decisions are what the kube-vip environment judge made of each kube-vip container.
	decisions []kubevipenv.Decision
}

// deny is a refusal of one rendered object.
func (j *judge) deny(o *Object, format string, args ...interface{}) error {
	return guestchart.Refuse(guestchart.ReasonRenderRefused, "", "the %s chart rendered %s %s: %s", j.chart, o.kind.Kind, displayName(o), fmt.Sprintf(format, args...))
}

func displayName(o *Object) string {
	if ns := o.meta.GetNamespace(); ns != "" {
		return ns + "/" + o.meta.GetName()
	}
	return o.meta.GetName()
}

// identity holds an object to what the operator may later delete (Owned): a kind of the chart,
// the chart's name for the release, the release's namespace, which it fills in as Helm would.
func (j *judge) identity(o *Object) error {
	m := o.meta
	if !o.kind.createdBy(j.chart) {
		return j.deny(o, "the %s chart creates no %s", j.chart, o.kind.Kind)
	}
	if m.GetName() != j.name {
		return j.deny(o, "its name is not %s, the name the chart gives its objects", j.name)
	}
	switch {
	case o.kind.ClusterScoped && m.GetNamespace() != "":
		return j.deny(o, "a %s has no namespace", o.kind.Kind)
	case !o.kind.ClusterScoped && m.GetNamespace() != "" && m.GetNamespace() != j.namespace:
		return j.deny(o, "namespace %s is not the release's, %s", guestchart.Shorten(m.GetNamespace()), j.namespace)
	case !o.kind.ClusterScoped:
		m.SetNamespace(j.namespace)
	}
	return nil
}

// kubevipEnv translates the environment of kube-vip's container for the release of its image
// (kubevipenv.Judge), once every variable is judged.
func (j *judge) kubevipEnv(o *Object) error {
	t := podTemplate(o.obj)
	if j.chart != guestchart.Kubevip || t == nil {
		return nil
	}
	for i := range t.Spec.Containers {
		c := &t.Spec.Containers[i]
		env := make([]kubevipenv.EnvVar, 0, len(c.Env))
		from := map[string]*corev1.EnvVarSource{}
		for _, e := range c.Env {
			env = append(env, kubevipenv.EnvVar{Name: e.Name, Value: e.Value, FromRef: e.ValueFrom != nil})
			from[e.Name] = e.ValueFrom
		}
		d, err := kubevipenv.Judge(c.Image, env)
		if err != nil {
			var r *guestchart.Refusal
			if errors.As(err, &r) {
				r.Message = fmt.Sprintf("%s %s, container %s: %s", o.kind.Kind, displayName(o), guestchart.Shorten(c.Name), r.Message)
			}
			return err
		}
		c.Env = c.Env[:0]
		for _, e := range d.Env {
			v := corev1.EnvVar{Name: e.Name, Value: e.Value}
			if e.FromRef {
				v = corev1.EnvVar{Name: e.Name, ValueFrom: from[e.Name]}
			}
			c.Env = append(c.Env, v)
		}
		j.decisions = append(j.decisions, d)
	}
	return nil
}
