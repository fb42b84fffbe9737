package chartvalues

import (
	"fmt"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
)

// ProviderConfigMapName is the ConfigMap the operator asks kube-vip-cloud-provider (chart 0.2.4
// and later, value configMapName) to read, in the release's namespace: the name the original
// operator always wrote. It is the product's, never a value's: the operator writes its address
// pool where the provider reads, and a value that named another ConfigMap would send that write
// into someone else's object.
const ProviderConfigMapName = "kubevip"

// providerValues is the typed schema of the kube-vip-cloud-provider chart's values
// (kube-vip/helm-charts kube-vip-cloud-provider 0.2.x; read from 0.2.10).
type providerValues struct {
	Image         *imagepolicy.Value `json:"image,omitempty"`
	ConfigMapName string             `json:"configMapName,omitempty"`
	Replicas      *int32             `json:"replicasCount,omitempty"`
	LBClass       *bool              `json:"enableloadbalancerClass,omitempty"`
	Scheduling
}

func providerKeys() []KeyDoc {
	return append([]KeyDoc{
		{"image", "repository (one of the allowed kube-vip-cloud-provider images; under a registry (guestImages), ghcr.io/kube-vip/kube-vip-cloud-provider or none is moved there), tag (a release such as v0.0.12, pinned with @sha256: and a digest where the deployment requires digests), pullPolicy (Always, IfNotPresent, Never)"},
		{"configMapName", ProviderConfigMapName + " only: the operator names the ConfigMap the provider reads, and writes the address pool there"},
		{"replicasCount", "1 to 5"},
		{"enableloadbalancerClass", "true or false"},
	}, schedulingKeys()...)
}

func (s Schema) providerValues(raw map[string]interface{}) (Values, error) {
	var v providerValues
	if err := s.decode(raw, guestchart.CloudProvider, &v.Image, &v.Scheduling, target{"configMapName", &v.ConfigMapName},
		target{"replicasCount", &v.Replicas}, target{"enableloadbalancerClass", &v.LBClass}); err != nil {
		return Values{}, err
	}
	switch {
	case v.ConfigMapName != "" && v.ConfigMapName != ProviderConfigMapName:
		return Values{}, fmt.Errorf("configMapName must be %s (or left out): the operator writes the address pool into the ConfigMap the provider reads, and names it", ProviderConfigMapName)
	case v.Replicas != nil && (*v.Replicas < 1 || *v.Replicas > 5):
		return Values{}, fmt.Errorf("replicasCount must be from 1 to 5")
	}
	v.ConfigMapName = ProviderConfigMapName
	return s.values(&v, &v.Scheduling, v.Image, ObjectName(guestchart.CloudProvider, ""))
}
