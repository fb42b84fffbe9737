package operator

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
)

// TestReadSecurity: the deployment's security Secret is read by name; a missing one, one without
// the settings key and one whose settings do not parse are errors that name the Secret and quote
// nothing of its data; a whole one gives its settings.
func TestReadSecurity(t *testing.T) {
	t.Parallel()
	secret := func(data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kube-fip-operator-security", Namespace: "kube-fip"}, Data: data}
	}
	whole := `{"allowedChartSources":"https://kube-vip.github.io/helm-charts","allowHTTPChartSources":false,"allowedKubevipImages":"ghcr.io/kube-vip/kube-vip",` +
		`"allowedCloudProviderImages":"ghcr.io/kube-vip/kube-vip-cloud-provider","allowedChartDigests":"","allowedKubevipModes":"arp","allowedGuestNamespaces":"kube-system","chartCredentialsSecret":""}`
	for _, tc := range []struct {
		name   string
		secret *corev1.Secret
		want   string // a part of the error; "" for none
	}{
		{"missing", nil, "kube-fip/kube-fip-operator-security does not exist"},
		{"without its key", secret(map[string][]byte{"other": []byte("x")}), "kube-fip/kube-fip-operator-security"},
		{"not JSON", secret(map[string][]byte{installpolicy.SecretKey: []byte("token-abc123 {")}), "kube-fip/kube-fip-operator-security"},
		{"whole", secret(map[string][]byte{installpolicy.SecretKey: []byte(whole)}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewSimpleClientset()
			if tc.secret != nil {
				kube = fake.NewSimpleClientset(tc.secret)
			}
			d, err := ReadSecurity(context.Background(), kube.CoreV1(), "kube-fip", "kube-fip-operator-security")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.want == "":
				if d.ChartSources != "https://kube-vip.github.io/helm-charts" || d.KubevipModes != "arp" {
					t.Errorf("settings %+v; want those of the Secret", d)
				}
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Errorf("error %v; want one saying %q", err, tc.want)
			case strings.Contains(err.Error(), "token-abc123"):
				t.Errorf("the error quotes the Secret's data: %v", err)
			}
		})
	}
}
