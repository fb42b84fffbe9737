package installpolicy

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// judge holds what one approval judges every rendered object against: the chart, the release,
// and the name the values give the chart's objects.
type judge struct {
	policy    Policy
	chart     Chart
	release   string
	namespace string
	// name is what the chart names every object (values' nameOverride, or the chart's name).
	name string
	// decisions are what the kube-vip environment judge made of each kube-vip container.
	decisions []Decision
}

// deny is a refusal of one rendered object.
func (j *judge) deny(o *object, format string, args ...interface{}) error {
	return refuse(ReasonRenderRefused, "", "the %s chart rendered %s %s: %s", j.chart, o.gvk.Kind, displayName(o), fmt.Sprintf(format, args...))
}

func displayName(o *object) string {
	if ns := o.meta.GetNamespace(); ns != "" {
		return ns + "/" + o.meta.GetName()
	}
	return o.meta.GetName()
}

// clusterScoped are the kinds without a namespace.
func clusterScoped(kind string) bool { return kind == "ClusterRole" || kind == "ClusterRoleBinding" }

// creates reports whether the pinned upstream chart creates objects of kind.
func (j *judge) creates(kind string) bool {
	switch kind {
	case "ServiceAccount", "ClusterRole", "ClusterRoleBinding":
		return true
	case "DaemonSet", "PodMonitor", "Role", "RoleBinding":
		return j.chart == Kubevip
	case "Deployment":
		return j.chart == CloudProvider
	}
	return false
}

// identity holds an object to what the operator may later delete (Owned): a kind of the chart,
// the chart's name for the release, the release's namespace, which it fills in as Helm would.
func (j *judge) identity(o *object) error {
	m := o.meta
	if !j.creates(o.gvk.Kind) {
		return j.deny(o, "the %s chart creates no %s", j.chart, o.gvk.Kind)
	}
	if m.GetName() != j.name {
		return j.deny(o, "its name is not %s, the name the chart gives its objects", j.name)
	}
	switch {
	case clusterScoped(o.gvk.Kind) && m.GetNamespace() != "":
		return j.deny(o, "a %s has no namespace", o.gvk.Kind)
	case !clusterScoped(o.gvk.Kind) && m.GetNamespace() != "" && m.GetNamespace() != j.namespace:
		return j.deny(o, "namespace %s is not the release's, %s", shorten(m.GetNamespace()), j.namespace)
	case !clusterScoped(o.gvk.Kind):
		m.SetNamespace(j.namespace)
	}
	return nil
}

// kubevipEnv translates the environment of kube-vip's container for the release of its image
// (JudgeKubevipEnv), once every variable is judged.
func (j *judge) kubevipEnv(o *object) error {
	t := podTemplate(o.obj)
	if j.chart != Kubevip || t == nil {
		return nil
	}
	for i := range t.Spec.Containers {
		c := &t.Spec.Containers[i]
		env := make([]EnvVar, 0, len(c.Env))
		from := map[string]*corev1.EnvVarSource{}
		for _, e := range c.Env {
			env = append(env, EnvVar{Name: e.Name, Value: e.Value, FromRef: e.ValueFrom != nil})
			from[e.Name] = e.ValueFrom
		}
		d, err := JudgeKubevipEnv(c.Image, env)
		if err != nil {
			var r *Refusal
			if errors.As(err, &r) {
				r.Message = fmt.Sprintf("%s %s, container %s: %s", o.gvk.Kind, displayName(o), shorten(c.Name), r.Message)
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

func pullPolicyProblem(p corev1.PullPolicy) error {
	switch p {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		return nil
	}
	return fmt.Errorf("must be Always, IfNotPresent or Never")
}

// monitoringPortProblem allows kube-vip's one port: monitoring, TCP, where prometheus_server
// serves its metrics, and nothing of the host.
func monitoringPortProblem(env []corev1.EnvVar, p corev1.ContainerPort) error {
	served := ""
	for _, e := range env {
		if e.Name == "prometheus_server" && e.ValueFrom == nil {
			if m := listenAddress.FindStringSubmatch(e.Value); m != nil {
				served = m[2]
			}
		}
	}
	want := corev1.ContainerPort{Name: "monitoring", ContainerPort: p.ContainerPort, Protocol: p.Protocol}
	if p != want || (p.Protocol != "" && p.Protocol != corev1.ProtocolTCP) || p.ContainerPort < 1 || served != fmt.Sprint(p.ContainerPort) {
		return fmt.Errorf("may only be the monitoring port (TCP, no hostPort or hostIP) at the port of env prometheus_server")
	}
	return nil
}
