package integration

import (
	"context"
	"encoding/json"
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	kubefipv1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
)

// TestSchemaAcceptsValidObjects creates an IPv4 and an IPv6 range and FloatingIPs with and without
// an address: the API server takes them as they are.
func TestSchemaAcceptsValidObjects(t *testing.T) {
	shard := shards.Take(t)
	c := shard.Kubefip
	shard.CreateNamespace(t, "c-m-schema01")

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

// tableOf asks the API server for the table kubectl and the Rancher UI show: of one object when
// name is given, else of every object of the resource (in namespace, when given).
func tableOf(t *testing.T, resource, namespace, name string) metav1.Table {
	t.Helper()
	cfg := rest.CopyConfig(shards.Of(t).Env.Config)
	cfg.GroupVersion = &kubefipv1.SchemeGroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = kubernetesCodecs()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req := rc.Get().Resource(resource).SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	if namespace != "" {
		req = req.Namespace(namespace)
	}
	if name != "" {
		req = req.Name(name)
	}
	raw, err := req.DoRaw(context.Background())
	if err != nil {
		t.Fatalf("table of %s: %v", resource, err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatalf("table of %s: %v", resource, err)
	}
	return table
}

// missingDescriptions walks a schema as JSON (the CRD's openAPIV3Schema or a published OpenAPI
// document) and returns the path of every property, at any depth, without a description.
func missingDescriptions(path string, schema map[string]any) []string {
	var missing []string
	if props, ok := schema["properties"].(map[string]any); ok {
		for name, p := range props {
			prop, _ := p.(map[string]any)
			if d, _ := prop["description"].(string); strings.TrimSpace(d) == "" {
				missing = append(missing, path+"."+name)
			}
			missing = append(missing, missingDescriptions(path+"."+name, prop)...)
		}
	}
	if items, ok := schema["items"].(map[string]any); ok {
		missing = append(missing, missingDescriptions(path+"[]", items)...)
	}
	if values, ok := schema["additionalProperties"].(map[string]any); ok {
		missing = append(missing, missingDescriptions(path+"[*]", values)...)
	}
	return missing
}

// TestSchemaDescriptionsArePublished: the descriptions reach the OpenAPI document the API server
// publishes for the group, which is what kubectl explain reads. (That the CRDs describe every
// field is TestEveryFieldIsDescribed, pkg/crds.)
func TestSchemaDescriptionsArePublished(t *testing.T) {
	shard := shards.Take(t)
	dc := discovery.NewDiscoveryClientForConfigOrDie(shard.Env.Config)
	var schemas map[string]map[string]any
	rig.Eventually(t, 30*time.Second, "the kubefip group in the published OpenAPI v3 document", func() bool {
		paths, err := dc.OpenAPIV3().Paths()
		if err != nil {
			return false
		}
		gv, ok := paths["apis/kubefip.k8s.binbash.org/v1"]
		if !ok {
			return false
		}
		raw, err := gv.Schema("application/json")
		if err != nil {
			return false
		}
		var doc struct {
			Components struct {
				Schemas map[string]map[string]any `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return false
		}
		schemas = doc.Components.Schemas
		region := nested(schemas["org.binbash.k8s.kubefip.v1.FloatingIPRange"], "properties", "spec", "properties", "region")
		return region != nil
	})
	for _, kind := range []string{"FloatingIPRange", "FloatingIP", "FloatingIPAllocation"} {
		schema := schemas["org.binbash.k8s.kubefip.v1."+kind]
		if schema == nil {
			t.Fatalf("%s is not in the published OpenAPI document", kind)
		}
		if d, _ := schema["description"].(string); d == "" {
			t.Errorf("%s: the published schema has no description", kind)
		}
		for _, path := range missingDescriptions(kind, schema) {
			t.Errorf("published %s has no description", path)
		}
	}
	region := nested(schemas["org.binbash.k8s.kubefip.v1.FloatingIPRange"], "properties", "spec", "properties", "region")
	if d, _ := region["description"].(string); !strings.Contains(d, "unused") || !strings.Contains(d, "compatibility") {
		t.Errorf("spec.region is described as %q; want it named unused and kept for compatibility", d)
	}
}

func nested(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, _ := m[k].(map[string]any)
		if next == nil {
			return nil
		}
		m = next
	}
	return m
}

// TestSchemaKeepsRegion creates a range the way the original operator's users wrote them, with
// spec.region, and reads it back: the API server does not prune the field, and an update through
// the typed client keeps it.
func TestSchemaKeepsRegion(t *testing.T) {
	shard := shards.Take(t)
	rangeGVR := kubefipv1.SchemeGroupVersion.WithResource("floatingipranges")
	dyn := dynamic.NewForConfigOrDie(shard.Env.Config).Resource(rangeGVR)
	original := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubefip.k8s.binbash.org/v1",
		"kind":       "FloatingIPRange",
		"metadata": map[string]any{
			"name": "schema-region",
			"annotations": map[string]any{
				kubefipv1.AnnotationHarvesterClusterName: "harvester-cluster1",
				kubefipv1.AnnotationHarvesterNetworkName: "vlan213",
			},
		},
		"spec": map[string]any{"iprange": "10.213.13.0/28", "region": "eu-west-1"},
	}}
	if _, err := dyn.Create(context.Background(), original, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Delete(context.Background(), "schema-region", metav1.DeleteOptions{}) })

	got, err := dyn.Get(context.Background(), "schema-region", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if region, _, _ := unstructured.NestedString(got.Object, "spec", "region"); region != "eu-west-1" {
		t.Fatalf("spec.region read back as %q, want eu-west-1: the API server pruned it", region)
	}

	c := shard.Kubefip
	r, err := c.FloatingIPRange().Get("schema-region", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Spec.Region != "eu-west-1" {
		t.Fatalf("typed spec.region = %q, want eu-west-1", r.Spec.Region)
	}
	r.Spec.Exclude = []string{"10.213.13.5"}
	if _, err := c.FloatingIPRange().Update(r); err != nil {
		t.Fatal(err)
	}
	got, err = dyn.Get(context.Background(), "schema-region", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if region, _, _ := unstructured.NestedString(got.Object, "spec", "region"); region != "eu-west-1" {
		t.Fatalf("after an update spec.region is %q, want eu-west-1", region)
	}
}

// TestSchemaCategory resolves the kubefip category as kubectl get kubefip does, through discovery,
// and lists what it names: all three kinds, with a range, a FloatingIP and an allocation in them.
func TestSchemaCategory(t *testing.T) {
	shard := shards.Take(t)
	c := shard.Kubefip
	shard.CreateNamespace(t, "c-m-schema03")
	r, err := c.FloatingIPRange().Create(&kubefipv1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: "schema-category"},
		Spec:       kubefipv1.FloatingIPRangeSpec{IPRange: "10.213.13.16/28"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.FloatingIPRange().Delete(r.Name, &metav1.DeleteOptions{}) })
	f, err := c.FloatingIP().Create(&kubefipv1.FloatingIP{
		ObjectMeta: metav1.ObjectMeta{Name: "schema-category", Namespace: "c-m-schema03", Annotations: map[string]string{
			kubefipv1.AnnotationClusterName:     "schema-category",
			kubefipv1.AnnotationFloatingIPRange: r.Name,
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.FloatingIP().Delete(f.Namespace, f.Name, &metav1.DeleteOptions{}) })
	a, err := c.FloatingIPAllocation().Create(newAllocation(netip.MustParseAddr("10.213.13.17"), r.Name, f))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.FloatingIPAllocation().Delete(a.Name, &metav1.DeleteOptions{}) })

	dc := discovery.NewDiscoveryClientForConfigOrDie(shard.Env.Config)
	resources, ok := restmapper.NewDiscoveryCategoryExpander(dc).Expand("kubefip")
	if !ok {
		t.Fatal("discovery knows no category kubefip")
	}
	var names []string
	for _, gr := range resources {
		names = append(names, gr.String())
	}
	sort.Strings(names)
	if want := "floatingipallocations.kubefip.k8s.binbash.org,floatingipranges.kubefip.k8s.binbash.org," +
		"floatingips.kubefip.k8s.binbash.org"; strings.Join(names, ",") != want {
		t.Fatalf("category kubefip = %v, want %s", names, want)
	}

	dyn := dynamic.NewForConfigOrDie(shard.Env.Config)
	found := map[string]bool{}
	for _, gr := range resources {
		list, err := dyn.Resource(gr.WithVersion("v1")).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range list.Items {
			found[item.GetKind()+" "+item.GetNamespace()+"/"+item.GetName()] = true
		}
	}
	for _, want := range []string{"FloatingIPRange /schema-category", "FloatingIP c-m-schema03/schema-category",
		"FloatingIPAllocation /" + a.Name} {
		if !found[want] {
			t.Errorf("kubectl get kubefip would not list %s", want)
		}
	}
}
