package charts

import (
	"regexp"
	"strings"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/backup"
)

const resourceSetName = "kube-fip-operator-resource-set"

func backupOn() map[string]interface{} {
	return map[string]interface{}{"backup": map[string]interface{}{"resourceSet": map[string]interface{}{"enabled": true}}}
}

// renderBackup renders the operator chart in namespace ns with both the kubefip and the
// rancher-backup APIs present.
func renderBackup(t *testing.T, ns string, values map[string]interface{}) []*unstructured.Unstructured {
	t.Helper()
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render(c, RenderOptions{Namespace: ns, Values: values, KubeVersion: testKubeVersion,
		APIVersions: append(InstallAPIVersions(), backup.ResourceSetAPIVersion)})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestBackupResourceSetOffByDefault: without the value, and so without needing Rancher Backups,
// no ResourceSet is rendered.
func TestBackupResourceSetOffByDefault(t *testing.T) {
	for _, values := range []map[string]interface{}{nil, allSwitchesOn()} {
		if rs := ofKind(renderOperator(t, values), "ResourceSet"); len(rs) != 0 {
			t.Errorf("a ResourceSet is rendered with backup.resourceSet.enabled unset")
		}
	}
}

// TestBackupResourceSet: enabled, the chart renders a ResourceSet that decodes strictly into
// rancher-backup's type, selects the CRDs the CRD chart installs and every FloatingIPRange and
// FloatingIP in any namespace, selects nothing of other groups or other CRDs, and scales down the
// Deployment the chart renders, in the release's namespace, during a restore.
func TestBackupResourceSet(t *testing.T) {
	const ns = "fip-elsewhere"
	objs := renderBackup(t, ns, backupOn())
	var set backup.ResourceSet
	rendered := find(t, objs, "ResourceSet", resourceSetName)
	convert(t, rendered, &set)
	if set.APIVersion != "resources.cattle.io/v1" || set.Namespace != "" {
		t.Errorf("ResourceSet is %s in namespace %q, want resources.cattle.io/v1, cluster-scoped", set.APIVersion, set.Namespace)
	}
	for _, sel := range set.ResourceSelectors {
		for _, expr := range []string{sel.KindsRegexp, sel.ResourceNameRegexp, sel.NamespaceRegexp, sel.ExcludeResourceNameRegexp} {
			if _, err := regexp.Compile(expr); err != nil {
				t.Errorf("selector %+v: %v", sel, err)
			}
		}
	}

	deploy := find(t, objs, "Deployment", "kube-fip-operator")
	want := backup.ControllerReference{APIVersion: "apps/v1", Resource: "deployments", Namespace: deploy.GetNamespace(), Name: deploy.GetName()}
	if len(set.ControllerReferences) != 1 || set.ControllerReferences[0] != want || deploy.GetNamespace() != ns {
		t.Errorf("controllerReferences %+v, want only %+v", set.ControllerReferences, want)
	}

	crdResource := metav1.APIResource{Name: "customresourcedefinitions", Kind: "CustomResourceDefinition"}
	selects := func(apiVersion string, res metav1.APIResource, namespace, name string) bool {
		t.Helper()
		ok, err := set.Selects(apiVersion, res, namespace, name)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	crds := crdChartCRDs(t)
	if len(crds) != 3 {
		t.Fatalf("the CRD chart renders %d CRDs, want 3", len(crds))
	}
	for _, crd := range crds {
		if !selects("apiextensions.k8s.io/v1", crdResource, "", crd.Name) {
			t.Errorf("CRD %s is not selected: a restore would not bring back the objects' status", crd.Name)
		}
		res := metav1.APIResource{Name: crd.Spec.Names.Plural, Kind: crd.Spec.Names.Kind, Namespaced: crd.Spec.Scope == apiextv1.NamespaceScoped}
		for _, v := range crd.Spec.Versions {
			for _, namespace := range []string{"", "c-m-abcd1234", "fleet-default"} {
				if res.Namespaced == (namespace == "") {
					continue
				}
				// Allocations are derived: a restored FloatingIP has a new UID, so a restored
				// allocation would name a gone owner. The operator records the addresses again.
				want := crd.Spec.Names.Kind != "FloatingIPAllocation"
				if got := selects(crd.Spec.Group+"/"+v.Name, res, namespace, "any-name"); got != want {
					t.Errorf("%s %s/any-name selected: %v, want %v", crd.Spec.Names.Kind, namespace, got, want)
				}
			}
		}
	}
	for _, other := range []string{"clusters.provisioning.cattle.io", "resourcesets.resources.cattle.io", "floatingips.kubefip.k8s.binbash.org.example.com", "kubefip.k8s.binbash.org"} {
		if selects("apiextensions.k8s.io/v1", crdResource, "", other) {
			t.Errorf("CRD %s is selected", other)
		}
	}
	if selects("v1", metav1.APIResource{Name: "secrets", Kind: "Secret", Namespaced: true}, ns, "kube-fip-config") ||
		selects("v1", metav1.APIResource{Name: "configmaps", Kind: "ConfigMap", Namespaced: true}, ns, "kube-fip-config") {
		t.Error("the ResourceSet selects objects outside the kubefip group and its CRDs")
	}
}

// crdChartCRDs renders the CRD chart.
func crdChartCRDs(t *testing.T) []apiextv1.CustomResourceDefinition {
	t.Helper()
	c, err := Load(chartDir(CRDChart))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render(c, RenderOptions{Namespace: testNamespace, KubeVersion: testKubeVersion})
	if err != nil {
		t.Fatal(err)
	}
	var out []apiextv1.CustomResourceDefinition
	for _, o := range ofKind(objs, "CustomResourceDefinition") {
		var crd apiextv1.CustomResourceDefinition
		convert(t, o, &crd)
		out = append(out, crd)
	}
	return out
}

// TestBackupResourceSetNeedsRancherBackups: enabled where the cluster has no ResourceSet API, the
// install fails and says what to install; an offline render may opt out as for the CRD check.
func TestBackupResourceSetNeedsRancherBackups(t *testing.T) {
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Render(c, RenderOptions{Namespace: testNamespace, Values: backupOn(), KubeVersion: testKubeVersion,
		APIVersions: InstallAPIVersions()})
	if err == nil || !strings.Contains(err.Error(), "Rancher Backups") || !strings.Contains(err.Error(), "resources.cattle.io/v1") {
		t.Fatalf("render without the ResourceSet API: %v, want a failure naming Rancher Backups", err)
	}
	values := backupOn()
	values["validateInstallCRD"] = false
	objs, err := Render(c, RenderOptions{Namespace: testNamespace, Values: values, KubeVersion: testKubeVersion})
	if err != nil {
		t.Fatal(err)
	}
	find(t, objs, "ResourceSet", resourceSetName)
}

// TestBackupReadme: the Backup of docs/operations.md names the ResourceSet the chart renders, and
// its Restore keeps objects created since the backup (prune off), as the text explains.
func TestBackupReadme(t *testing.T) {
	section, err := rig.DocSection("docs/operations.md", "## Backup and restore")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]map[string]interface{}{}
	for _, block := range strings.Split(section, "```yaml\n")[1:] {
		body, _, _ := strings.Cut(block, "```")
		var m map[string]interface{}
		if err := yaml.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("operations.md YAML: %v\n%s", err, body)
		}
		if m["apiVersion"] != "resources.cattle.io/v1" {
			t.Errorf("operations.md: %v has apiVersion %v", m["kind"], m["apiVersion"])
		}
		docs[m["kind"].(string)] = m
	}
	backup, _ := docs["Backup"]["spec"].(map[string]interface{})
	if backup["resourceSetName"] != resourceSetName {
		t.Errorf("operations.md: the Backup names ResourceSet %v, the chart renders %s", backup["resourceSetName"], resourceSetName)
	}
	find(t, renderBackup(t, testNamespace, backupOn()), "ResourceSet", resourceSetName)
	restore, _ := docs["Restore"]["spec"].(map[string]interface{})
	if restore["prune"] != false || restore["backupFilename"] == nil {
		t.Errorf("operations.md: the Restore spec %v: want a backupFilename and prune: false", restore)
	}
}
