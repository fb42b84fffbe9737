package cachetrim

import (
	"encoding/json"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	rkev1 "github.com/rancher/rancher/pkg/apis/rke.cattle.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
)

// fullMeta is metadata as a busy management cluster's objects carry it.
func fullMeta(name, namespace string) metav1.ObjectMeta {
	now := metav1.Now()
	return metav1.ObjectMeta{
		Name: name, Namespace: namespace, UID: "uid-" + "name", ResourceVersion: "42", Generation: 3, CreationTimestamp: now,
		GenerateName:      "g-",
		Labels:            map[string]string{"team": "a", "kube-fip.k8s.binbash.org/kubevip": "true"},
		Annotations:       map[string]string{LastAppliedAnnotation: `{"huge":"copy"}`, "field.cattle.io/creatorId": "u-1"},
		Finalizers:        []string{"wrangler.cattle.io/x"},
		OwnerReferences:   []metav1.OwnerReference{{APIVersion: "management.cattle.io/v3", Kind: "Cluster", Name: "c-m-abc", UID: "uid-owner"}},
		DeletionTimestamp: &now,
		ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "rancher", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}},
	}
}

func size(t *testing.T, obj interface{}) int {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}

// checkMeta asserts that a read-only kind's trimmed metadata holds exactly the fields of
// ReadOnlyMetadata, as the full one has them.
func checkMeta(t *testing.T, full, trimmed metav1.ObjectMeta) {
	t.Helper()
	var want metav1.ObjectMeta
	from, to := reflect.ValueOf(full), reflect.ValueOf(&want).Elem()
	for _, name := range strings.Fields(ReadOnlyMetadata) {
		if !from.FieldByName(name).IsValid() {
			t.Fatalf("ReadOnlyMetadata names %s, which ObjectMeta has not", name)
		}
		to.FieldByName(name).Set(from.FieldByName(name))
	}
	if !reflect.DeepEqual(want, trimmed) {
		t.Errorf("metadata differs:\nwant %+v\ngot  %+v", want, trimmed)
	}
	if trimmed.Annotations != nil || trimmed.Finalizers != nil || trimmed.OwnerReferences != nil || trimmed.ManagedFields != nil {
		t.Errorf("annotations, finalizers, owner references or managedFields kept: %+v", trimmed)
	}
}

func provisioningClusters() map[string]*provv1.Cluster {
	pool := func(name string, cp bool, kind, config, credential string) provv1.RKEMachinePool {
		p := provv1.RKEMachinePool{Name: name, ControlPlaneRole: cp, EtcdRole: cp, WorkerRole: !cp, Quantity: new(int32),
			MachineDeploymentLabels: map[string]string{"x": "y"}, DynamicSchemaSpec: `{"big":"schema"}`}
		if kind != "" {
			p.NodeConfig = &corev1.ObjectReference{Kind: kind, Name: config, Namespace: "fleet-default"}
		}
		p.CloudCredentialSecretName = credential
		return p
	}
	full := func(pools []provv1.RKEMachinePool, global map[string]interface{}) *provv1.Cluster {
		c := &provv1.Cluster{TypeMeta: metav1.TypeMeta{APIVersion: "provisioning.cattle.io/v1", Kind: "Cluster"}, ObjectMeta: fullMeta("guest", "fleet-default")}
		c.Spec.KubernetesVersion = "v1.30.4+rke2r1"
		c.Spec.CloudCredentialSecretName = "cattle-global-data:cc-cluster"
		c.Spec.RKEConfig = &provv1.RKEConfig{MachinePools: pools}
		c.Spec.RKEConfig.MachineGlobalConfig = rkev1.GenericMap{Data: global}
		c.Spec.RKEConfig.ChartValues = rkev1.GenericMap{Data: map[string]interface{}{"rke2-cilium": map[string]interface{}{"big": "values"}}}
		c.Spec.RKEConfig.Registries = &rkev1.Registry{Mirrors: map[string]rkev1.Mirror{"docker.io": {Endpoints: []string{"https://mirror"}}}}
		c.Status = provv1.ClusterStatus{Ready: true, ClusterName: "c-m-abc", ClientSecretName: "guest-kubeconfig", FleetWorkspaceName: "fleet-default", ObservedGeneration: 3}
		return c
	}
	dual := map[string]interface{}{"cluster-cidr": "10.42.0.0/16,fd00:42::/56", "service-cidr": []interface{}{"10.43.0.0/16", "fd00:43::/112"}, "cni": "calico", "disable": []interface{}{"rke2-ingress-nginx"}}
	single := map[string]interface{}{"cni": "canal", "cluster-cidr": "10.42.0.0/16"}
	noSecret := full([]provv1.RKEMachinePool{pool("cp", true, "HarvesterConfig", "cp-config", "")}, nil)
	noSecret.Status.ClientSecretName = ""
	imported := full(nil, nil)
	imported.Spec.RKEConfig = nil
	return map[string]*provv1.Cluster{
		"harvester, dual-stack": full([]provv1.RKEMachinePool{
			pool("workers", false, "HarvesterConfig", "w-config", ""),
			pool("cp", true, "HarvesterConfig", "cp-config", "cattle-global-data:cc-pool")}, dual),
		"harvester, single-stack, cluster credential": full([]provv1.RKEMachinePool{pool("cp", true, "HarvesterConfig", "cp-config", "")}, single),
		"harvester, bad stack value":                  full([]provv1.RKEMachinePool{pool("cp", true, "HarvesterConfig", "cp-config", "")}, map[string]interface{}{"cluster-cidr": 7, "service-cidr": "x"}),
		"harvester, no control-plane pool":            full([]provv1.RKEMachinePool{pool("w", false, "HarvesterConfig", "w-config", "")}, nil),
		"harvester, pool without config":              full([]provv1.RKEMachinePool{pool("cp", true, "", "", "")}, nil),
		"other node driver":                           full([]provv1.RKEMachinePool{pool("cp", true, "Amazonec2Config", "aws", "")}, nil),
		"no kubeconfig Secret named":                  noSecret,
		"imported":                                    imported,
		"custom (rkeConfig without pools)":            full(nil, map[string]interface{}{"cni": "calico"}),
	}
}

// The trimmed provisioning cluster answers every question discovery, the FloatingIP controller and
// the guest passes ask of it as the full one does.
func TestProvisioningClusterKeepsWhatIsRead(t *testing.T) {
	for name, full := range provisioningClusters() {
		t.Run(name, func(t *testing.T) {
			keep := full.DeepCopy()
			out, err := ProvisioningCluster(full.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			trimmed := out.(*provv1.Cluster)
			checkMeta(t, keep.ObjectMeta, trimmed.ObjectMeta)
			if trimmed.TypeMeta != keep.TypeMeta {
				t.Errorf("TypeMeta %v, want %v", trimmed.TypeMeta, keep.TypeMeta)
			}
			cp1, ok1, p1 := harvester.ControlPlaneOf(keep)
			cp2, ok2, p2 := harvester.ControlPlaneOf(trimmed)
			if cp1 != cp2 || ok1 != ok2 || !reflect.DeepEqual(p1, p2) {
				t.Errorf("ControlPlaneOf: full (%+v, %v, %v), trimmed (%+v, %v, %v)", cp1, ok1, p1, cp2, ok2, p2)
			}
			if s1, s2 := harvester.StackOf(keep), harvester.StackOf(trimmed); s1 != s2 {
				t.Errorf("StackOf: full %+v, trimmed %+v", s1, s2)
			}
			if trimmed.Status.ClusterName != keep.Status.ClusterName || trimmed.Status.ClientSecretName != keep.Status.ClientSecretName {
				t.Errorf("status %+v, want clusterName and clientSecretName of %+v", trimmed.Status, keep.Status)
			}
			if trimmed.Spec.CloudCredentialSecretName != keep.Spec.CloudCredentialSecretName {
				t.Errorf("cloudCredentialSecretName %q, want %q", trimmed.Spec.CloudCredentialSecretName, keep.Spec.CloudCredentialSecretName)
			}
			if trimmed.Spec.KubernetesVersion != "" || (trimmed.Spec.RKEConfig != nil && (trimmed.Spec.RKEConfig.ChartValues.Data != nil || trimmed.Spec.RKEConfig.Registries != nil)) {
				t.Errorf("unread fields kept: %+v", trimmed.Spec)
			}
			if size(t, trimmed) >= size(t, keep) {
				t.Errorf("trimmed object is %d bytes as JSON, the full one %d", size(t, trimmed), size(t, keep))
			}
		})
	}
}

// rancherView is what the guest passes read of a management cluster: Connected and Ready.
func rancherView(c *mgmtv3.Cluster) []mgmtv3.ClusterCondition {
	var out []mgmtv3.ClusterCondition
	for _, cond := range c.Status.Conditions {
		if cond.Type == "Connected" || cond.Type == "Ready" {
			out = append(out, mgmtv3.ClusterCondition{Type: cond.Type, Status: cond.Status, Reason: cond.Reason})
		}
	}
	return out
}

// fullManagementCluster is a management cluster with Rancher's large status.
func fullManagementCluster(name string, conditions ...mgmtv3.ClusterCondition) *mgmtv3.Cluster {
	c := &mgmtv3.Cluster{TypeMeta: metav1.TypeMeta{APIVersion: "management.cattle.io/v3", Kind: "Cluster"}, ObjectMeta: fullMeta(name, "")}
	c.Spec.DisplayName = "harv1"
	c.Spec.Description = "a cluster"
	c.Status.Conditions = append([]mgmtv3.ClusterCondition{{Type: "Provisioned", Status: corev1.ConditionTrue, Message: "long message"}}, conditions...)
	c.Status.AgentImage = "rancher/rancher-agent:v2.9.0"
	c.Status.Driver = "imported"
	c.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi")}
	c.Status.Capacity = c.Status.Allocatable
	c.Status.Requested = c.Status.Allocatable
	c.Status.AppliedSpec = c.Spec
	c.Status.CACert = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"
	c.Status.Capabilities.LoadBalancerCapabilities.Provider = "harvester"
	return c
}

func TestManagementClusterKeepsWhatIsRead(t *testing.T) {
	cases := map[string][]mgmtv3.ClusterCondition{
		"connected":     {{Type: "Connected", Status: corev1.ConditionTrue, LastUpdateTime: "now"}, {Type: "Ready", Status: corev1.ConditionTrue, Message: "ok"}},
		"disconnected":  {{Type: "Connected", Status: corev1.ConditionFalse}, {Type: "Ready", Status: corev1.ConditionFalse, Reason: "Disconnected", Message: "agent gone"}},
		"provisioning":  {{Type: "Ready", Status: corev1.ConditionUnknown, Reason: "Waiting"}},
		"no conditions": nil,
	}
	for name, conditions := range cases {
		t.Run(name, func(t *testing.T) {
			full := fullManagementCluster("c-m-abc", conditions...)
			keep := full.DeepCopy()
			out, err := ManagementCluster(full)
			if err != nil {
				t.Fatal(err)
			}
			trimmed := out.(*mgmtv3.Cluster)
			checkMeta(t, keep.ObjectMeta, trimmed.ObjectMeta)
			if trimmed.Spec.DisplayName != keep.Spec.DisplayName {
				t.Errorf("displayName %q, want %q", trimmed.Spec.DisplayName, keep.Spec.DisplayName)
			}
			if !reflect.DeepEqual(rancherView(trimmed), rancherView(keep)) {
				t.Errorf("Connected and Ready: %+v, want %+v", rancherView(trimmed), rancherView(keep))
			}
			if trimmed.Status.Allocatable != nil || trimmed.Status.AgentImage != "" || trimmed.Status.AppliedSpec.DisplayName != "" || trimmed.Status.Capabilities.LoadBalancerCapabilities.Provider != "" {
				t.Errorf("Rancher's large status is kept: %+v", trimmed.Status)
			}
		})
	}
}

func TestNamespaceKeepsNameLabelsAndDeletion(t *testing.T) {
	full := &corev1.Namespace{ObjectMeta: fullMeta("c-m-abc", ""), Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	keep := full.DeepCopy()
	out, err := Namespace(full)
	if err != nil {
		t.Fatal(err)
	}
	ns := out.(*corev1.Namespace)
	checkMeta(t, keep.ObjectMeta, ns.ObjectMeta)
	if ns.DeletionTimestamp == nil || ns.Name != "c-m-abc" {
		t.Errorf("the namespace's name or deletion is lost: %+v", ns.ObjectMeta)
	}
	if ns.Spec.Finalizers != nil || ns.Status.Phase != "" {
		t.Errorf("spec or status kept: %+v", ns)
	}
}

func TestHarvesterConfigKeepsTheNetwork(t *testing.T) {
	cases := map[string]map[string]interface{}{
		"networkInfo":        {"networkInfo": `{"interfaces":[{"networkName":"default/vlan10"}]}`},
		"networkInfo object": {"networkInfo": map[string]interface{}{"interfaces": []interface{}{map[string]interface{}{"networkName": "default/vlan20"}}}},
		"networkName":        {"networkName": "default/vlan30"},
		"bare networkName":   {"networkName": "vlan30"},
		"neither":            {},
		"wrong type":         {"networkName": int64(7)},
	}
	for name, fields := range cases {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]interface{}{"cpuCount": "2", "memorySize": "4", "userData": "#cloud-config\n" + string(make([]byte, 4096)), "networkData": "x"}}
			for k, v := range fields {
				u.Object[k] = v
			}
			u.SetAPIVersion("rke-machine-config.cattle.io/v1")
			u.SetKind("HarvesterConfig")
			u.SetNamespace("fleet-default")
			u.SetName("cp-config")
			u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "rancher"}})
			u.SetAnnotations(map[string]string{"field.cattle.io/creatorId": "u-1"})
			u.SetLabels(map[string]string{"team": "a"})
			u.SetUID("uid-config")
			keep := u.DeepCopy()
			out, err := HarvesterConfig(u)
			if err != nil {
				t.Fatal(err)
			}
			trimmed := out.(*unstructured.Unstructured)
			c1, p1 := harvester.NetworkOf(keep.Object)
			c2, p2 := harvester.NetworkOf(trimmed.Object)
			if !reflect.DeepEqual(c1, c2) || !reflect.DeepEqual(p1, p2) {
				t.Errorf("NetworkOf: full (%+v, %v), trimmed (%+v, %v)", c1, p1, c2, p2)
			}
			if trimmed.GetName() != "cp-config" || trimmed.GetNamespace() != "fleet-default" || trimmed.GetKind() != "HarvesterConfig" {
				t.Errorf("identity lost: %v", trimmed.Object)
			}
			if _, ok := trimmed.Object["userData"]; ok || trimmed.GetManagedFields() != nil || trimmed.GetAnnotations() != nil {
				t.Errorf("userData, managedFields or annotations kept: %v", trimmed.Object)
			}
			if trimmed.GetUID() != "uid-config" || !reflect.DeepEqual(trimmed.GetLabels(), keep.GetLabels()) {
				t.Errorf("uid or labels lost: %v", trimmed.Object)
			}
		})
	}
}

// A kind the operator writes back keeps everything but managedFields: an update from the cache
// must not drop an annotation, the last-applied one included.
func TestManagedFieldsOnlyKeepsAllButManagedFields(t *testing.T) {
	f := &v1.FloatingIP{ObjectMeta: fullMeta("guest-kubevip", "c-m-abc"), Spec: v1.FloatingIPSpec{}, Status: v1.FloatingIPStatus{IPAddress: "10.0.0.5", Range: "r"}}
	keep := f.DeepCopy()
	out, err := ManagedFieldsOnly(f)
	if err != nil {
		t.Fatal(err)
	}
	keep.ManagedFields = nil
	if !reflect.DeepEqual(out, keep) {
		t.Errorf("got %+v, want %+v", out, keep)
	}
}

// Two objects decoded apart share the strings that repeat between them once cached: the keys of
// their labels and annotations, their namespace and apiVersion, the type and reason of their
// conditions; what is one object's own (its name, an annotation's value) stays its own. The two
// are decoded with no garbage collection between them, which would let unique forget a string.
func TestRepeatingStringsAreShared(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	decode := func(name string) *v1.FloatingIP {
		data := []byte(`{"apiVersion":"kubefip.k8s.binbash.org/v1","kind":"FloatingIP","metadata":{"name":"` + name + `","namespace":"c-m-abc",` +
			`"labels":{"team":"a"},"annotations":{"clusterName":"` + name + `"},"finalizers":["kubefip.k8s.binbash.org/release"]},` +
			`"status":{"range":"r1","conditions":[{"type":"Allocated","status":"True","reason":"Allocated","message":"holds 10.0.0.5"}]}}`)
		var f v1.FloatingIP
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatal(err)
		}
		out, err := ManagedFieldsOnly(&f)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*v1.FloatingIP)
	}
	a, b := decode("one"), decode("two")
	same := func(what, x, y string) {
		t.Helper()
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are two copies", what, x, y)
		}
	}
	key := func(m map[string]string) string {
		for k := range m {
			return k
		}
		return ""
	}
	same("apiVersion", a.APIVersion, b.APIVersion)
	same("namespace", a.Namespace, b.Namespace)
	same("label key", key(a.Labels), key(b.Labels))
	same("label value", a.Labels["team"], b.Labels["team"])
	same("annotation key", key(a.Annotations), key(b.Annotations))
	same("finalizer", a.Finalizers[0], b.Finalizers[0])
	same("status.range", a.Status.Range, b.Status.Range)
	same("condition type", a.Status.Conditions[0].Type, b.Status.Conditions[0].Type)
	same("condition reason", a.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason)
	if a.Annotations["clusterName"] != "one" || b.Annotations["clusterName"] != "two" || a.Name != "one" {
		t.Errorf("an object's own values changed: %v, %v", a.ObjectMeta, b.ObjectMeta)
	}
}

// A HarvesterConfig with malformed metadata is still cached, with what of it reads as well formed:
// a transform that failed would stop its informer's list and watch.
func TestHarvesterConfigWithMalformedMetadata(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "rke-machine-config.cattle.io/v1", "kind": "HarvesterConfig", "networkName": "default/vlan10",
		"metadata": map[string]interface{}{"name": "cp-config", "namespace": "fleet-default", "labels": "not a map",
			"creationTimestamp": "yesterday", "generation": "two", "annotations": []interface{}{1}},
	}}
	out, err := HarvesterConfig(u)
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	trimmed := out.(*unstructured.Unstructured)
	if trimmed.GetName() != "cp-config" || trimmed.GetNamespace() != "fleet-default" || trimmed.GetLabels() != nil || trimmed.GetAnnotations() != nil {
		t.Errorf("metadata %v; want the name and namespace only", trimmed.Object["metadata"])
	}
	if c, _ := harvester.NetworkOf(trimmed.Object); c.Network.Name != "vlan10" {
		t.Errorf("network %+v; want vlan10", c)
	}
}
