package installpolicy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ProviderConfigMapName is the ConfigMap the operator asks kube-vip-cloud-provider (chart 0.2.4
// and later, value configMapName) to read: the name the original operator always wrote.
const ProviderConfigMapName = "kubevip"

// providerValues is the typed schema of the kube-vip-cloud-provider chart's values
// (kube-vip/helm-charts kube-vip-cloud-provider 0.2.x; read from 0.2.10).
type providerValues struct {
	Image         *image `json:"image,omitempty"`
	ConfigMapName string `json:"configMapName,omitempty"`
	NameOverride  string `json:"nameOverride,omitempty"`
	Replicas      *int32 `json:"replicasCount,omitempty"`
	LBClass       *bool  `json:"enableloadbalancerClass,omitempty"`
	scheduling
}

func providerKeys() []KeyDoc {
	return append([]KeyDoc{
		{"image", "repository (one of the allowed kube-vip-cloud-provider images), tag (a release such as v0.0.12, optionally pinned with @sha256: and a digest), pullPolicy (Always, IfNotPresent, Never)"},
		{"configMapName", "the ConfigMap the provider reads (chart 0.2.4 and later); the operator sets " + ProviderConfigMapName},
		{"nameOverride", "the name of every object of the release (DNS label)"},
		{"replicasCount", "1 to 5"},
		{"enableloadbalancerClass", "true or false"},
	}, schedulingKeys()...)
}

func (p Policy) providerValues(raw map[string]interface{}) (Values, error) {
	var v providerValues
	if err := decodeKeys(raw, target{"image", &v.Image}, target{"configMapName", &v.ConfigMapName}, target{"nameOverride", &v.NameOverride},
		target{"replicasCount", &v.Replicas}, target{"enableloadbalancerClass", &v.LBClass}); err != nil {
		return Values{}, err
	}
	if err := decodeScheduling(raw, &v.scheduling); err != nil {
		return Values{}, err
	}
	if err := p.checkImageValues(CloudProvider, v.Image); err != nil {
		return Values{}, err
	}
	switch {
	case v.ConfigMapName != "" && len(validation.IsDNS1123Subdomain(v.ConfigMapName)) > 0:
		return Values{}, fmt.Errorf("configMapName must be a ConfigMap name (lower-case DNS subdomain)")
	case v.NameOverride != "" && len(validation.IsDNS1123Label(v.NameOverride)) > 0:
		return Values{}, fmt.Errorf("nameOverride must be a DNS label (at most 63 lower-case letters, digits or '-')")
	case v.Replicas != nil && (*v.Replicas < 1 || *v.Replicas > 5):
		return Values{}, fmt.Errorf("replicasCount must be from 1 to 5")
	}
	if v.ConfigMapName == "" {
		v.ConfigMapName = ProviderConfigMapName
	}
	m, err := serialise(v)
	if err != nil {
		return Values{}, err
	}
	out := Values{Map: m, Name: objectName(CloudProvider, v.NameOverride)}
	if v.Image != nil {
		out.Image = v.Image.Repository
	}
	return out, nil
}
