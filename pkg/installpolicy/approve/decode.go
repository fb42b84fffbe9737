package approve

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/render"
)

// Object is one rendered document as the API server would read it.
type Object struct {
	template string
	kind     Kind
	// obj is the typed object: a client-go type, or *podMonitor.
	obj  runtime.Object
	meta metav1.Object
}

// Decode reads the documents chart rendered, each as the API server does; documents without
// content are left out.
func Decode(chart guestchart.Chart, docs []render.Doc) ([]*Object, error) {
	var out []*Object
	for _, d := range docs {
		o, err := decode(chart, d)
		if err != nil {
			return nil, err
		}
		if o != nil {
			out = append(out, o)
		}
	}
	return out, nil
}

// decode reads one rendered document as the API server does: YAML with a repeated key refused,
// then JSON decoded case-sensitively into the typed object with any unknown or repeated field
// refused. A twin key that differs only in case (hostPID beside hostpid), which a case-insensitive
// reader folds into one, is an unknown field here, as it is to the API server, which would drop
// it. It returns nil for a document without content.
func decode(chart guestchart.Chart, r render.Doc) (*Object, error) {
	deny := func(format string, args ...interface{}) (*Object, error) {
		return nil, guestchart.Refuse(guestchart.ReasonRenderRefused, "", "the %s chart rendered %s: "+format, append([]interface{}{chart, r.Template}, args...)...)
	}
	data, err := yaml.YAMLToJSONStrict([]byte(r.Content))
	if err != nil {
		return deny("YAML the API server would not read as written (%s)", guestchart.Shorten(err.Error()))
	}
	if string(data) == "null" {
		return nil, nil
	}
	var head metav1.TypeMeta
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &head); err != nil {
		return deny("a document that is not an object")
	}
	gvk := schema.FromAPIVersionAndKind(head.APIVersion, head.Kind)
	kind, ok := kindOf(gvk)
	if !ok {
		return deny("a %s (%s), which is not a kind the %s chart creates", guestchart.Shorten(head.Kind), guestchart.Shorten(head.APIVersion), chart)
	}
	obj := kind.typed()
	if pm, ok := obj.(*podMonitor); ok {
		strict, err := sigsjson.UnmarshalStrict(data, pm)
		if err != nil {
			return deny("a %s that does not decode", head.Kind)
		}
		if len(strict) > 0 {
			return deny("a %s whose %s", head.Kind, chartvalues.StrictError(strict[0]))
		}
	} else {
		decoded, _, err := strictSerializer().Decode(data, nil, obj)
		if runtime.IsStrictDecodingError(err) {
			return deny("a %s the API server reads differently: %s", head.Kind, guestchart.Shorten(err.Error()))
		}
		if err != nil {
			return deny("a %s that does not decode", head.Kind)
		}
		obj = decoded
	}
	meta, ok := obj.(metav1.Object)
	if !ok {
		return deny("a %s without metadata", head.Kind)
	}
	return &Object{template: r.Template, kind: kind, obj: obj, meta: meta}, nil
}

// strictSerializer decodes JSON as the API server does with strict field validation.
func strictSerializer() *json.Serializer {
	return json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
		json.SerializerOptions{Strict: true})
}

// podMonitorGVK is the Prometheus operator's PodMonitor, which the kube-vip chart renders with
// podMonitor.enabled.
var podMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}

// podMonitor holds only the fields the kube-vip chart renders into its PodMonitor: decoded
// strictly, any other field (credentials, relabelling, a selector of other namespaces) is refused.
type podMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              podMonitorSpec `json:"spec"`
}

type podMonitorSpec struct {
	Selector            podMonitorSelector   `json:"selector"`
	PodMetricsEndpoints []podMetricsEndpoint `json:"podMetricsEndpoints"`
}

type podMonitorSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

type podMetricsEndpoint struct {
	Port string `json:"port"`
}

// DeepCopyObject makes podMonitor a runtime.Object.
func (p *podMonitor) DeepCopyObject() runtime.Object {
	out := *p
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.Selector.MatchLabels = map[string]string{}
	maps.Copy(out.Spec.Selector.MatchLabels, p.Spec.Selector.MatchLabels)
	out.Spec.PodMetricsEndpoints = append([]podMetricsEndpoint(nil), p.Spec.PodMetricsEndpoints...)
	return &out
}
