package chartvalues

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
)

// Scheduling are the value keys both charts print into their pod spec to place it: decoded into
// the Kubernetes types and validated as the API server validates them, so that a mapping where a
// list belongs, or a string that is not a label, is refused here rather than turned into other
// fields of the pod by the chart's toYaml.
type Scheduling struct {
	NodeSelector     map[string]string             `json:"nodeSelector,omitempty"`
	Tolerations      []corev1.Toleration           `json:"tolerations,omitempty"`
	Affinity         *corev1.Affinity              `json:"affinity,omitempty"`
	Resources        *corev1.ResourceRequirements  `json:"resources,omitempty"`
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// schedulingKeys are the keys of scheduling, with how each is documented.
func schedulingKeys() []KeyDoc {
	return []KeyDoc{
		{"nodeSelector", "label keys and values, as Kubernetes validates them"},
		{"tolerations", "a list of Kubernetes tolerations"},
		{"affinity", "a Kubernetes affinity (node, pod and pod anti-affinity)"},
		{"resources", "requests and limits of cpu, memory and ephemeral-storage"},
		{"imagePullSecrets", "a list of {name: a Secret of the release namespace}"},
	}
}

// decode reads chart's image key, then targets, then the scheduling keys of raw, validates the
// scheduling keys, and puts the image at the registry, judged.
func (s Schema) decode(raw map[string]interface{}, chart guestchart.Chart, image **imagepolicy.Value, sched *Scheduling, targets ...target) error {
	targets = append(append([]target{{"image", image}}, targets...), target{"nodeSelector", &sched.NodeSelector},
		target{"tolerations", &sched.Tolerations}, target{"affinity", &sched.Affinity}, target{"resources", &sched.Resources},
		target{"imagePullSecrets", &sched.ImagePullSecrets})
	for _, t := range targets {
		if err := decodeKey(raw, t.key, t.into); err != nil {
			return err
		}
	}
	if err := sched.Validate(); err != nil {
		return err
	}
	*image = s.Images.AtRegistry(chart, *image)
	return s.Images.CheckValue(chart, *image)
}

// Validate validates the keys as the API server validates them.
func (s *Scheduling) Validate() error {
	if err := CheckLabels("nodeSelector", s.NodeSelector); err != nil {
		return err
	}
	for i, t := range s.Tolerations {
		if err := tolerationProblem(fmt.Sprintf("tolerations[%d]", i), t); err != nil {
			return err
		}
	}
	if s.Affinity != nil {
		if err := affinityProblem(s.Affinity); err != nil {
			return err
		}
	}
	if s.Resources != nil {
		if err := resourcesProblem(s.Resources); err != nil {
			return err
		}
	}
	for i, ref := range s.ImagePullSecrets {
		if len(validation.IsDNS1123Subdomain(ref.Name)) > 0 {
			return fmt.Errorf("imagePullSecrets[%d].name must be a Secret name (lower-case DNS subdomain)", i)
		}
	}
	return nil
}

// CheckLabels validates a map of label keys and values.
func CheckLabels(at string, labels map[string]string) error {
	for k, v := range labels {
		if len(validation.IsQualifiedName(k)) > 0 {
			return fmt.Errorf("%s: key %q is not a label key", at, guestchart.Shorten(k))
		}
		if len(validation.IsValidLabelValue(v)) > 0 {
			return fmt.Errorf("%s.%s: the value is not a label value (at most 63 letters, digits, '-', '_' or '.')", at, k)
		}
	}
	return nil
}

func tolerationProblem(at string, t corev1.Toleration) error {
	if t.Key != "" && len(validation.IsQualifiedName(t.Key)) > 0 {
		return fmt.Errorf("%s.key is not a taint key", at)
	}
	switch t.Operator {
	case "", corev1.TolerationOpEqual:
		if len(validation.IsValidLabelValue(t.Value)) > 0 {
			return fmt.Errorf("%s.value is not a taint value", at)
		}
	case corev1.TolerationOpExists:
		if t.Value != "" {
			return fmt.Errorf("%s.value must be empty with operator Exists", at)
		}
	default:
		return fmt.Errorf("%s.operator must be Equal or Exists", at)
	}
	switch t.Effect {
	case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule:
		if t.TolerationSeconds != nil {
			return fmt.Errorf("%s.tolerationSeconds needs effect NoExecute", at)
		}
	case corev1.TaintEffectNoExecute:
	default:
		return fmt.Errorf("%s.effect must be NoSchedule, PreferNoSchedule or NoExecute", at)
	}
	return nil
}

func affinityProblem(a *corev1.Affinity) error {
	if n := a.NodeAffinity; n != nil {
		if r := n.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			if len(r.NodeSelectorTerms) == 0 {
				return fmt.Errorf("affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution needs a nodeSelectorTerm")
			}
			for i, term := range r.NodeSelectorTerms {
				if err := nodeTermProblem(fmt.Sprintf("affinity.nodeAffinity.required...nodeSelectorTerms[%d]", i), term); err != nil {
					return err
				}
			}
		}
		for i, p := range n.PreferredDuringSchedulingIgnoredDuringExecution {
			at := fmt.Sprintf("affinity.nodeAffinity.preferred...[%d]", i)
			if p.Weight < 1 || p.Weight > 100 {
				return fmt.Errorf("%s.weight must be from 1 to 100", at)
			}
			if err := nodeTermProblem(at+".preference", p.Preference); err != nil {
				return err
			}
		}
	}
	if pa := a.PodAffinity; pa != nil {
		if err := podTermsProblem("affinity.podAffinity", pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution); err != nil {
			return err
		}
	}
	if pa := a.PodAntiAffinity; pa != nil {
		if err := podTermsProblem("affinity.podAntiAffinity", pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution); err != nil {
			return err
		}
	}
	return nil
}

func nodeTermProblem(at string, term corev1.NodeSelectorTerm) error {
	for i, r := range term.MatchExpressions {
		if len(validation.IsQualifiedName(r.Key)) > 0 {
			return fmt.Errorf("%s.matchExpressions[%d].key is not a label key", at, i)
		}
		if err := requirementProblem(fmt.Sprintf("%s.matchExpressions[%d]", at, i), r.Operator, r.Values); err != nil {
			return err
		}
	}
	for i, r := range term.MatchFields {
		if r.Key != "metadata.name" {
			return fmt.Errorf("%s.matchFields[%d].key must be metadata.name", at, i)
		}
		if r.Operator != corev1.NodeSelectorOpIn && r.Operator != corev1.NodeSelectorOpNotIn {
			return fmt.Errorf("%s.matchFields[%d].operator must be In or NotIn", at, i)
		}
		for _, v := range r.Values {
			if len(validation.IsDNS1123Subdomain(v)) > 0 {
				return fmt.Errorf("%s.matchFields[%d].values must be node names", at, i)
			}
		}
	}
	return nil
}

func requirementProblem(at string, op corev1.NodeSelectorOperator, values []string) error {
	switch op {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(values) == 0 {
			return fmt.Errorf("%s.values must not be empty with operator %s", at, op)
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(values) > 0 {
			return fmt.Errorf("%s.values must be empty with operator %s", at, op)
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(values) != 1 {
			return fmt.Errorf("%s.values must be one number with operator %s", at, op)
		}
	default:
		return fmt.Errorf("%s.operator must be In, NotIn, Exists, DoesNotExist, Gt or Lt", at)
	}
	for _, v := range values {
		if len(validation.IsValidLabelValue(v)) > 0 {
			return fmt.Errorf("%s.values hold something that is not a label value", at)
		}
	}
	return nil
}

func podTermsProblem(at string, required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) error {
	terms := slices.Clone(required)
	for i, p := range preferred {
		if p.Weight < 1 || p.Weight > 100 {
			return fmt.Errorf("%s.preferred...[%d].weight must be from 1 to 100", at, i)
		}
		terms = append(terms, p.PodAffinityTerm)
	}
	opts := metav1validation.LabelSelectorValidationOptions{}
	for i, term := range terms {
		path := field.NewPath(fmt.Sprintf("%s term %d", at, i))
		if len(validation.IsQualifiedName(term.TopologyKey)) > 0 {
			return fmt.Errorf("%s term %d: topologyKey is not a label key", at, i)
		}
		for _, sel := range []*metav1.LabelSelector{term.LabelSelector, term.NamespaceSelector} {
			if errs := metav1validation.ValidateLabelSelector(sel, opts, path); len(errs) > 0 {
				return fmt.Errorf("%s term %d: a label selector is not valid", at, i)
			}
		}
		for _, ns := range term.Namespaces {
			if len(validation.IsDNS1123Label(ns)) > 0 {
				return fmt.Errorf("%s term %d: namespaces must be namespace names", at, i)
			}
		}
		for _, k := range slices.Concat(term.MatchLabelKeys, term.MismatchLabelKeys) {
			if len(validation.IsQualifiedName(k)) > 0 {
				return fmt.Errorf("%s term %d: matchLabelKeys and mismatchLabelKeys must be label keys", at, i)
			}
		}
	}
	return nil
}

// resourcesProblem allows requests and limits of the resources a node offers every pod.
func resourcesProblem(r *corev1.ResourceRequirements) error {
	if len(r.Claims) > 0 {
		return fmt.Errorf("resources.claims is not supported")
	}
	for what, list := range map[string]corev1.ResourceList{"requests": r.Requests, "limits": r.Limits} {
		for name, q := range list {
			switch name {
			case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
			default:
				return fmt.Errorf("resources.%s.%s: only cpu, memory and ephemeral-storage", what, guestchart.Shorten(string(name)))
			}
			if q.Sign() < 0 {
				return fmt.Errorf("resources.%s.%s must not be negative", what, name)
			}
		}
	}
	return nil
}

// KeyDoc is one value key the schema supports and what it takes: the messages name the keys, and
// the table of value keys in docs/security.md is this list.
type KeyDoc struct{ Key, Takes string }

// keyList names keys for a message.
func keyList(docs []KeyDoc) string {
	keys := make([]string, len(docs))
	for i, d := range docs {
		keys[i] = d.Key
	}
	return strings.Join(keys, ", ")
}
