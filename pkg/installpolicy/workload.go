package installpolicy

import (
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// workload judges the one workload of each chart: kube-vip's DaemonSet, host-networked with
// NET_ADMIN and NET_RAW on the control-plane nodes, and the provider's unprivileged Deployment.
// Every field of the workload, its pod and its container must be one the upstream chart sets.
func (j *judge) workload(o *object) error {
	var tmpl *corev1.PodTemplateSpec
	var selector map[string]string
	switch w := o.obj.(type) {
	case *appsv1.DaemonSet:
		if f := setFields(&w.Spec, "selector", "template", "updateStrategy"); len(f) > 0 {
			return j.deny(o, "spec.%s is not set by the chart", strings.Join(f, ", spec."))
		}
		if err := updateProblem(&w.Spec.UpdateStrategy); err != nil {
			return j.deny(o, "spec.%v", err)
		}
		tmpl, selector = &w.Spec.Template, matchLabels(w.Spec.Selector)
	case *appsv1.Deployment:
		if f := setFields(&w.Spec, "replicas", "selector", "template"); len(f) > 0 {
			return j.deny(o, "spec.%s is not set by the chart", strings.Join(f, ", spec."))
		}
		if r := w.Spec.Replicas; r != nil && (*r < 0 || *r > 5) {
			return j.deny(o, "spec.replicas %d: at most 5", *r)
		}
		tmpl, selector = &w.Spec.Template, matchLabels(w.Spec.Selector)
	default:
		return j.deny(o, "a %s is not a kind the chart creates", o.gvk.Kind)
	}
	if selector == nil || !sameLabels(selector, j.selector()) {
		return j.deny(o, "spec.selector is not the chart's app.kubernetes.io/name and app.kubernetes.io/instance")
	}
	if f := setFields(&tmpl.ObjectMeta, "labels"); len(f) > 0 {
		return j.deny(o, "spec.template.metadata.%s is not set by the chart", strings.Join(f, ", spec.template.metadata."))
	}
	for k, v := range selector {
		if tmpl.Labels[k] != v {
			return j.deny(o, "the pod template's labels do not carry the selector's %s", k)
		}
	}
	if err := labelsProblem("spec.template.metadata.labels", tmpl.Labels); err != nil {
		return j.deny(o, "%v", err)
	}
	return j.pod(o, &tmpl.Spec)
}

// matchLabels are a selector's labels, or nil when it is missing or selects by expressions too.
func matchLabels(s *metav1.LabelSelector) map[string]string {
	if s == nil || len(s.MatchExpressions) > 0 {
		return nil
	}
	return s.MatchLabels
}

// pod allows what the charts set on the pod: one container, the release's ServiceAccount, where
// it is scheduled, and (kube-vip only) the host's network.
func (j *judge) pod(o *object, spec *corev1.PodSpec) error {
	allowed := []string{"containers", "serviceAccountName", "nodeSelector", "tolerations", "affinity", "priorityClassName", "imagePullSecrets"}
	if j.chart == Kubevip {
		allowed = append(allowed, "hostNetwork")
		if !spec.HostNetwork {
			return j.deny(o, "spec.template.spec.hostNetwork is not true, as the chart sets it")
		}
	}
	if f := setFields(spec, allowed...); len(f) > 0 {
		return j.deny(o, "spec.template.spec.%s is not set by the chart", strings.Join(f, ", spec.template.spec."))
	}
	if spec.ServiceAccountName != j.name {
		return j.deny(o, "spec.template.spec.serviceAccountName is not the release's ServiceAccount %s", j.name)
	}
	s := scheduling{NodeSelector: spec.NodeSelector, Tolerations: spec.Tolerations, Affinity: spec.Affinity,
		ImagePullSecrets: spec.ImagePullSecrets}
	if err := s.validate(); err != nil {
		return j.deny(o, "spec.template.spec.%v", err)
	}
	if len(spec.Containers) != 1 {
		return j.deny(o, "%d containers: the chart runs one", len(spec.Containers))
	}
	c := &spec.Containers[0]
	if c.Resources.Size() > 0 {
		if err := resourcesProblem(&c.Resources); err != nil {
			return j.deny(o, "containers[%s].%v", c.Name, err)
		}
	}
	if j.chart == Kubevip {
		return j.kubevipContainer(o, c)
	}
	return j.providerContainer(o, c)
}

// kubevipContainer: kube-vip's manager, with the environment the judge of its release allows, the
// two network capabilities, and at most the monitoring port.
func (j *judge) kubevipContainer(o *object, c *corev1.Container) error {
	if f := setFields(c, "name", "image", "imagePullPolicy", "args", "env", "resources", "securityContext", "ports"); len(f) > 0 {
		return j.deny(o, "containers[%s].%s is not set by the chart", shorten(c.Name), strings.Join(f, ", "))
	}
	if c.Name != "kube-vip" {
		return j.deny(o, "the container is named %q, not kube-vip", shorten(c.Name))
	}
	if len(c.Args) != 1 || c.Args[0] != "manager" {
		return j.deny(o, "containers[kube-vip].args must be [manager], as the chart renders them without extraArgs")
	}
	if err := j.policy.checkImage(Kubevip, c.Image); err != nil {
		return j.deny(o, "containers[kube-vip]: %v", err)
	}
	if err := pullPolicyProblem(c.ImagePullPolicy); err != nil {
		return j.deny(o, "containers[kube-vip].%v", err)
	}
	// kube-vip's hardening must be there, not only be free of what it forbids: every capability
	// dropped but the two it needs.
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		return j.deny(o, "containers[kube-vip].securityContext.capabilities.drop must be [ALL], as the chart sets it")
	}
	if f := setFields(sc, "capabilities"); len(f) > 0 {
		return j.deny(o, "containers[kube-vip].securityContext.%s is not set by the chart", strings.Join(f, ", "))
	}
	for _, add := range sc.Capabilities.Add {
		if add != "NET_ADMIN" && add != "NET_RAW" {
			return j.deny(o, "containers[kube-vip].securityContext.capabilities.add %s: only NET_ADMIN and NET_RAW", shorten(string(add)))
		}
	}
	var env []EnvVar
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			ref := e.ValueFrom.FieldRef
			if f := setFields(e.ValueFrom, "fieldRef"); len(f) > 0 || ref == nil || !podAddresses()[ref.FieldPath] {
				return j.deny(o, "containers[kube-vip].env %s may be filled from the pod's address only", shorten(e.Name))
			}
		}
		env = append(env, EnvVar{Name: e.Name, Value: e.Value, FromRef: e.ValueFrom != nil})
	}
	for _, p := range c.Ports {
		if f := setFields(&p, "name", "containerPort", "protocol"); len(f) > 0 || p.Name != "monitoring" ||
			(p.Protocol != "" && p.Protocol != corev1.ProtocolTCP) || p.ContainerPort < 1 || !metricsPort(env, p.ContainerPort) {
			return j.deny(o, "containers[kube-vip].ports may only be the monitoring port (TCP, no hostPort or hostIP) at the port of env prometheus_server")
		}
	}
	d, err := JudgeKubevipEnv(c.Image, env)
	if err != nil {
		var r *Refusal
		if errors.As(err, &r) {
			r.Message = fmt.Sprintf("%s %s, container kube-vip: %s", o.gvk.Kind, displayName(o), r.Message)
		}
		return err
	}
	from := map[string]*corev1.EnvVarSource{}
	for _, e := range c.Env {
		from[e.Name] = e.ValueFrom
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
	return nil
}

// metricsPort reports whether port is where kube-vip serves its metrics (prometheus_server).
func metricsPort(env []EnvVar, port int32) bool {
	for _, e := range env {
		if e.Name == "prometheus_server" && !e.FromRef {
			if m := listenAddress.FindStringSubmatch(e.Value); m != nil {
				return m[2] == fmt.Sprint(port)
			}
		}
	}
	return false
}

// providerContainer: kube-vip-cloud-provider as the chart runs it, unprivileged, told only its
// leader-election lease and the ConfigMap it reads.
func (j *judge) providerContainer(o *object, c *corev1.Container) error {
	at := "containers[" + shorten(c.Name) + "]"
	if f := setFields(c, "name", "image", "imagePullPolicy", "command", "env", "resources", "securityContext"); len(f) > 0 {
		return j.deny(o, "%s.%s is not set by the chart", at, strings.Join(f, ", "))
	}
	if c.Name != j.name {
		return j.deny(o, "the container is named %q, not %s", shorten(c.Name), j.name)
	}
	if err := j.policy.checkImage(CloudProvider, c.Image); err != nil {
		return j.deny(o, "%s: %v", at, err)
	}
	if err := pullPolicyProblem(c.ImagePullPolicy); err != nil {
		return j.deny(o, "%s.%v", at, err)
	}
	if len(c.Command) == 0 || c.Command[0] != "/kube-vip-cloud-provider" {
		return j.deny(o, "%s.command must start with /kube-vip-cloud-provider", at)
	}
	for _, arg := range c.Command[1:] {
		flag, value, _ := strings.Cut(arg, "=")
		switch {
		case flag == "--leader-elect-resource-name" && len(validation.IsDNS1123Subdomain(value)) == 0:
		case flag == "--leader-elect-resource-namespace" && value == j.namespace:
		default:
			return j.deny(o, "%s.command: %q is not a flag the chart passes", at, shorten(arg))
		}
	}
	for _, e := range c.Env {
		ok := e.ValueFrom == nil
		switch e.Name {
		case "KUBEVIP_NAMESPACE":
			ok = ok && e.Value == j.namespace
		case "KUBEVIP_CONFIG_MAP":
			ok = ok && len(validation.IsDNS1123Subdomain(e.Value)) == 0
		case "KUBEVIP_ENABLE_LOADBALANCERCLASS":
			ok = ok && e.Value == "true"
		default:
			ok = false
		}
		if !ok {
			return j.deny(o, "%s.env %s is not a variable the chart sets, with a value it sets", at, shorten(e.Name))
		}
	}
	if sc := c.SecurityContext; sc != nil {
		if f := setFields(sc, "allowPrivilegeEscalation", "capabilities", "runAsNonRoot", "runAsUser", "runAsGroup", "seccompProfile", "readOnlyRootFilesystem"); len(f) > 0 {
			return j.deny(o, "%s.securityContext.%s is not set by the chart", at, strings.Join(f, ", "))
		}
		switch {
		case sc.AllowPrivilegeEscalation != nil && *sc.AllowPrivilegeEscalation:
			return j.deny(o, "%s.securityContext.allowPrivilegeEscalation must be false", at)
		case sc.Capabilities != nil && len(sc.Capabilities.Add) > 0:
			return j.deny(o, "%s.securityContext.capabilities.add: the provider needs none", at)
		case sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot,
			sc.RunAsUser != nil && *sc.RunAsUser == 0,
			sc.RunAsGroup != nil && *sc.RunAsGroup == 0:
			return j.deny(o, "%s.securityContext: the provider runs as non-root", at)
		case sc.SeccompProfile != nil && sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
			return j.deny(o, "%s.securityContext.seccompProfile must be RuntimeDefault", at)
		}
	}
	return nil
}

func pullPolicyProblem(p corev1.PullPolicy) error {
	switch p {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		return nil
	}
	return fmt.Errorf("imagePullPolicy must be Always, IfNotPresent or Never")
}
