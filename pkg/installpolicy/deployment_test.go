package installpolicy

import (
	"strings"
	"testing"
)

const goodSettings = `{"allowedChartSources":"https://a.example.com/charts,oci://registry.example.com/kv","allowHTTPChartSources":false,
"allowedKubevipImages":"ghcr.io/kube-vip/kube-vip","allowedCloudProviderImages":"","allowedChartDigests":"",
"allowedKubevipModes":"bgp","allowedGuestNamespaces":"kube-system","chartCredentialsSecret":"chart-pull"}`

func TestParseDeployment(t *testing.T) {
	d, err := ParseDeployment(map[string][]byte{SecretKey: []byte(goodSettings)})
	if err != nil {
		t.Fatal(err)
	}
	if d.ChartCredentialsSecret != "chart-pull" || d.AllowHTTP || d.KubevipModes != "bgp" {
		t.Errorf("parsed %+v", d)
	}
	p, err := New(d.Apply(Settings{}))
	if err != nil {
		t.Fatal(err)
	}
	if s := p.String(); !strings.Contains(s, "a.example.com") || !strings.Contains(s, "registry.example.com") || strings.Contains(s, "kube-vip.io") {
		t.Errorf("policy %s; want exactly the Secret's sources", s)
	}
}

// TestParseDeploymentRefusesBadInput: what is not the settings in full is refused with a message
// that says what is wrong and quotes none of the data; nothing panics.
func TestParseDeploymentRefusesBadInput(t *testing.T) {
	without := strings.Replace(goodSettings, `"allowedKubevipModes":"bgp",`, "", 1)
	for name, tc := range map[string]struct {
		data map[string][]byte
		says string
	}{
		"nil data":      {data: nil, says: `no key "settings"`},
		"other key":     {data: map[string][]byte{"flags": []byte(goodSettings)}, says: `no key "settings"`},
		"oversized":     {data: map[string][]byte{SecretKey: []byte(`{"allowedChartSources":"` + strings.Repeat("x", MaxSecretSettings) + `"}`)}, says: "more than the"},
		"not json":      {data: map[string][]byte{SecretKey: []byte("--allowed-chart-sources=secret-looking")}, says: "not a JSON object"},
		"json null":     {data: map[string][]byte{SecretKey: []byte("null")}, says: "not a JSON object"},
		"json list":     {data: map[string][]byte{SecretKey: []byte(`["a"]`)}, says: "not a JSON object"},
		"empty":         {data: map[string][]byte{SecretKey: nil}, says: "not a JSON object"},
		"missing key":   {data: map[string][]byte{SecretKey: []byte(without)}, says: "lacks allowedKubevipModes"},
		"missing all":   {data: map[string][]byte{SecretKey: []byte(`{}`)}, says: "lacks allowHTTPChartSources, allowedChartDigests"},
		"unknown key":   {data: map[string][]byte{SecretKey: []byte(strings.Replace(goodSettings, "{", `{"allowEverything":true,`, 1))}, says: "not one of allowedChartSources"},
		"wrong type":    {data: map[string][]byte{SecretKey: []byte(strings.Replace(goodSettings, `"allowHTTPChartSources":false`, `"allowHTTPChartSources":"yes-secret"`, 1))}, says: "allowHTTPChartSources a JSON string; want a bool"},
		"list not text": {data: map[string][]byte{SecretKey: []byte(strings.Replace(goodSettings, `"allowedGuestNamespaces":"kube-system"`, `"allowedGuestNamespaces":["kube-system"]`, 1))}, says: "allowedGuestNamespaces a JSON array"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseDeployment(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %v; want one saying %q", err, tc.says)
			}
			if strings.Contains(err.Error(), "secret-looking") || strings.Contains(err.Error(), "xxxx") {
				t.Errorf("error %v quotes the data", err)
			}
		})
	}
}

func FuzzParseDeployment(f *testing.F) {
	f.Add([]byte(goodSettings))
	f.Add([]byte(`{"allowedChartSources":1}`))
	f.Fuzz(func(_ *testing.T, raw []byte) {
		_, _ = ParseDeployment(map[string][]byte{SecretKey: raw})
	})
}
