package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	kubefipv1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
)

// kubefipClients returns the generated clients of the kubefip kinds. Only their client half is
// used here; no informer is started.
func kubefipClients(t *testing.T) kubefipcontrollers.Interface {
	t.Helper()
	f, err := kubefip.NewFactoryFromConfig(shared.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return f.Kubefip().V1()
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	c := kubernetes.NewForConfigOrDie(shared.env.Config)
	_, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// TestSchemaAcceptsValidObjects creates an IPv4 and an IPv6 range and FloatingIPs with and without
// an address: the API server takes them as they are.
func TestSchemaAcceptsValidObjects(t *testing.T) {
	c := kubefipClients(t)
	createNamespace(t, "c-m-schema01")

	for name, spec := range map[string]kubefipv1.FloatingIPRangeSpec{
		"schema-v4": {IPRange: "10.135.10.192/26", Exclude: []string{"10.135.10.200", "10.135.10.208/30", "10.135.10.220-10.135.10.225"}},
		"schema-v6": {IPRange: "fd00:10::/64"},
	} {
		r := &kubefipv1.FloatingIPRange{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
				kubefipv1.AnnotationHarvesterClusterName: "harvester-cluster1",
				kubefipv1.AnnotationHarvesterNetworkName: "vlan10",
			}},
			Spec: spec,
		}
		if _, err := c.FloatingIPRange().Create(r); err != nil {
			t.Errorf("creating range %s: %v", name, err)
		}
	}
	for name, ip := range map[string]string{"static-v4": "10.135.10.201", "static-v6": "fd00:10::5", "dynamic": ""} {
		f := &kubefipv1.FloatingIP{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "c-m-schema01", Annotations: map[string]string{
				kubefipv1.AnnotationClusterName:     "schema",
				kubefipv1.AnnotationFloatingIPRange: "schema-v4",
				kubefipv1.AnnotationUpdateConfigMap: "true",
			}},
			Spec: kubefipv1.FloatingIPSpec{IPAddress: ip},
		}
		if _, err := c.FloatingIP().Create(f); err != nil {
			t.Errorf("creating FloatingIP %s (%q): %v", name, ip, err)
		}
	}
}

// TestSchemaRejectsMalformedObjects shows the API server itself refusing malformed ranges and
// addresses, with a message that names the field.
func TestSchemaRejectsMalformedObjects(t *testing.T) {
	c := kubefipClients(t)
	createNamespace(t, "c-m-schema02")

	for _, tc := range []struct {
		name    string
		iprange string
		exclude []string
		field   string
	}{
		{"bad-cidr-text", "not-a-cidr", nil, "spec.iprange"},
		{"v4-prefix-33", "10.0.0.0/33", nil, "spec.iprange"},
		{"v4-octet-256", "10.0.0.256/24", nil, "spec.iprange"},
		{"v6-prefix-129", "fd00::/129", nil, "spec.iprange"},
		{"no-prefix", "10.0.0.1", nil, "spec.iprange"},
		{"missing", "", nil, "spec.iprange"},
		{"bad-exclude", "10.0.0.0/24", []string{"ten.0.0.1"}, "spec.exclude[0]"},
	} {
		t.Run("range/"+tc.name, func(t *testing.T) {
			r := &kubefipv1.FloatingIPRange{
				ObjectMeta: metav1.ObjectMeta{Name: tc.name},
				Spec:       kubefipv1.FloatingIPRangeSpec{IPRange: tc.iprange, Exclude: tc.exclude},
			}
			_, err := c.FloatingIPRange().Create(r)
			expectInvalid(t, err, tc.field)
		})
	}

	for _, tc := range []struct{ name, ip string }{
		{"octet-256", "10.0.0.256"},
		{"cidr-not-address", "10.0.0.1/32"},
		{"words", "hello"},
		{"v6-bad", "fd00:::1"},
		{"three-octets", "10.0.1"},
	} {
		t.Run("floatingip/"+tc.name, func(t *testing.T) {
			f := &kubefipv1.FloatingIP{
				ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: "c-m-schema02"},
				Spec:       kubefipv1.FloatingIPSpec{IPAddress: tc.ip},
			}
			_, err := c.FloatingIP().Create(f)
			expectInvalid(t, err, "spec.ipaddress")
		})
	}
}

func expectInvalid(t *testing.T, err error, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the API server accepted the object; want a schema error on %s", field)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error = %v; want Invalid", err)
	}
	if !strings.Contains(err.Error(), field) {
		t.Fatalf("error %q does not name %s", err, field)
	}
	t.Logf("rejected: %v", err)
}

// TestPrinterColumns asks for the table kubectl prints (kubectl get fip,fiprange) and checks its
// columns.
func TestPrinterColumns(t *testing.T) {
	for resource, want := range map[string][]string{
		"floatingipranges": {"Name", "CIDR", "Capacity", "Used", "Available", "Ready", "Age"},
		"floatingips":      {"Name", "IP", "Range", "Cluster", "Ready", "Age"},
	} {
		cfg := rest.CopyConfig(shared.env.Config)
		cfg.GroupVersion = &kubefipv1.SchemeGroupVersion
		cfg.APIPath = "/apis"
		cfg.NegotiatedSerializer = kubernetesCodecs()
		rc, err := rest.RESTClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := rc.Get().Resource(resource).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
			DoRaw(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", resource, err)
		}
		var table metav1.Table
		if err := json.Unmarshal(raw, &table); err != nil {
			t.Fatalf("%s: %v", resource, err)
		}
		var got []string
		for _, c := range table.ColumnDefinitions {
			got = append(got, c.Name)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s columns = %v, want %v", resource, got, want)
		}
	}
}
