package installpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// SecretKey is the key of the deployment's security Secret (the chart's
// kube-fip-operator-security) that holds its security settings, a JSON object of Deployment.
const SecretKey = "settings"

// MaxSecretSettings bounds the settings a security Secret may hold: they are a few lists, and
// what is larger is refused before it is decoded.
const MaxSecretSettings = 64 << 10

// Deployment are the deployment's security settings, the chart's security.*: what kube-fip-config
// may install into the guests, which takes more privilege to change than kube-fip-config itself.
// Lists are comma-separated, as the operator's flags of the same meaning take them; an empty list
// allows nothing (the guest namespaces: kube-system).
type Deployment struct {
	ChartSources           string `json:"allowedChartSources"`
	AllowHTTP              bool   `json:"allowHTTPChartSources"`
	KubevipImages          string `json:"allowedKubevipImages"`
	CloudProviderImages    string `json:"allowedCloudProviderImages"`
	ChartDigests           string `json:"allowedChartDigests"`
	KubevipModes           string `json:"allowedKubevipModes"`
	Namespaces             string `json:"allowedGuestNamespaces"`
	ChartCredentialsSecret string `json:"chartCredentialsSecret"`
}

// Apply returns s with the allow-lists of d.
func (d Deployment) Apply(s Settings) Settings {
	s.ChartSources = strings.Split(d.ChartSources, ",")
	s.AllowHTTP = d.AllowHTTP
	s.KubevipImages = strings.Split(d.KubevipImages, ",")
	s.CloudProviderImages = strings.Split(d.CloudProviderImages, ",")
	s.ChartDigests = strings.Split(d.ChartDigests, ",")
	s.KubevipModes = strings.Split(d.KubevipModes, ",")
	s.Namespaces = strings.Split(d.Namespaces, ",")
	return s
}

// deploymentKeys are the JSON keys of Deployment, every one of which a security Secret must hold:
// a key left out would silently mean the empty list rather than what the deployment meant.
func deploymentKeys() []string {
	t := reflect.TypeOf(Deployment{})
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		keys = append(keys, t.Field(i).Tag.Get("json"))
	}
	return keys
}

// ParseDeployment reads the security settings from the data of a security Secret: SecretKey must
// hold a JSON object with every key of Deployment and no other, within MaxSecretSettings. The
// errors say what is wrong without quoting the data.
func ParseDeployment(data map[string][]byte) (Deployment, error) {
	var d Deployment
	raw, ok := data[SecretKey]
	switch {
	case !ok:
		return d, fmt.Errorf("it has no key %q", SecretKey)
	case len(raw) > MaxSecretSettings:
		return d, fmt.Errorf("its key %q holds %d bytes, more than the %d its settings may take", SecretKey, len(raw), MaxSecretSettings)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return d, fmt.Errorf("its key %q is not a JSON object of the security settings", SecretKey)
	}
	var missing []string
	for _, k := range deploymentKeys() {
		if _, ok := fields[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return d, fmt.Errorf("its key %q lacks %s", SecretKey, strings.Join(missing, ", "))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return Deployment{}, fmt.Errorf("its key %q gives %s a JSON %s; want a %s", SecretKey, typeErr.Field, typeErr.Value, typeErr.Type)
		}
		return Deployment{}, fmt.Errorf("its key %q holds a setting that is not one of %s", SecretKey, strings.Join(deploymentKeys(), ", "))
	}
	return d, nil
}
