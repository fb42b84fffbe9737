package helminstall

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/approve"
)

// TestHelmsRESTMapperMapsTheChartsKindsOnly: the REST mapper Helm is given for a guest maps every
// kind the install policy lets the charts render, and the Namespace Helm creates, to its resource
// and scope without asking the guest anything; any other kind, or a known kind at another
// version, has no mapping, whatever the guest's discovery lists.
func TestHelmsRESTMapperMapsTheChartsKindsOnly(t *testing.T) {
	srv, requests := countingGuest(t)
	m, err := NewRESTClientGetter(&rest.Config{Host: srv.URL}, "kube-system").ToRESTMapper()
	if err != nil {
		t.Fatal(err)
	}
	mapped := []struct {
		gvk      schema.GroupVersionKind
		resource string
		scope    meta.RESTScopeName
	}{
		{schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, "serviceaccounts", meta.RESTScopeNameNamespace},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, "clusterroles", meta.RESTScopeNameRoot},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}, "clusterrolebindings", meta.RESTScopeNameRoot},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}, "roles", meta.RESTScopeNameNamespace},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}, "rolebindings", meta.RESTScopeNameNamespace},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}, "daemonsets", meta.RESTScopeNameNamespace},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "deployments", meta.RESTScopeNameNamespace},
		{schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}, "podmonitors", meta.RESTScopeNameNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "namespaces", meta.RESTScopeNameRoot},
	}
	if got, want := len(approve.Kinds())+1, len(mapped); got != want {
		t.Errorf("the policy has %d kinds and the Namespace; the table checks %d", got-1, want-1)
	}
	for _, c := range mapped {
		got, err := m.RESTMapping(c.gvk.GroupKind(), c.gvk.Version)
		if err != nil {
			t.Errorf("%s: %v", c.gvk, err)
			continue
		}
		if got.Resource != c.gvk.GroupVersion().WithResource(c.resource) || got.Scope.Name() != c.scope || got.GroupVersionKind != c.gvk {
			t.Errorf("%s maps to %s (%s); want %s (%s)", c.gvk, got.Resource, got.Scope.Name(), c.resource, c.scope)
		}
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "Secret"},
		{Version: "v1", Kind: "ConfigMap"},
		{Version: "v1", Kind: "Pod"},
		{Group: "batch", Version: "v1", Kind: "Job"},
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
		{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"},
		{Group: "apps", Version: "v1beta2", Kind: "DaemonSet"},
		{Group: "monitoring.coreos.com", Version: "v1alpha1", Kind: "PodMonitor"},
		{Group: "g1.example.com", Version: "v1", Kind: "Anything"},
	} {
		if got, err := m.RESTMapping(gvk.GroupKind(), gvk.Version); !meta.IsNoMatchError(err) {
			t.Errorf("%s maps to %v, %v; want no match", gvk, got, err)
		}
	}
	if got := requests(); len(got) > 0 {
		t.Errorf("mapping asked the guest %d times (%v); want never", len(got), got[:min(len(got), 4)])
	}
}

// countingGuest is a guest API server that answers /version and counts every request by path.
func countingGuest(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/version" {
			_, _ = w.Write([]byte(`{"major":"1","minor":"30","gitVersion":"v1.30.14"}`))
			return
		}
		// Discovery as a hostile guest would answer it: many groups.
		_, _ = w.Write([]byte(`{"kind":"APIGroupList","groups":[{"name":"g1.example.com","versions":[{"groupVersion":"g1.example.com/v1","version":"v1"}]}]}`))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := append([]string(nil), paths...)
		sort.Strings(out)
		return out
	}
}

// TestHelmIsGivenNoDiscovery: the discovery client Helm is given answers the server's version from
// the guest and refuses every other question without a request; and a Helm configuration for a
// guest builds a chart's objects, the namespace Helm creates with validation asked for, without
// one request to the guest: no discovery, no OpenAPI document.
func TestHelmIsGivenNoDiscovery(t *testing.T) {
	srv, requests := countingGuest(t)
	getter := NewRESTClientGetter(&rest.Config{Host: srv.URL}, "kube-system")
	dc, err := getter.ToDiscoveryClient()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := dc.ServerVersion(); err != nil || v.GitVersion != "v1.30.14" {
		t.Errorf("ServerVersion = %v, %v; want the guest's", v, err)
	}
	refused := map[string]error{}
	_, refused["ServerGroups"] = dc.ServerGroups()
	_, _, refused["ServerGroupsAndResources"] = dc.ServerGroupsAndResources()
	_, refused["ServerPreferredResources"] = dc.ServerPreferredResources()
	_, refused["ServerResourcesForGroupVersion"] = dc.ServerResourcesForGroupVersion("g1.example.com/v1")
	_, refused["OpenAPISchema"] = dc.OpenAPISchema()
	_, refused["OpenAPIV3"] = dc.OpenAPIV3().Paths()
	for what, err := range refused {
		if err == nil {
			t.Errorf("%s answered; want it refused", what)
		}
	}
	if got := requests(); len(got) != 1 || got[0] != "GET /version" {
		t.Errorf("the guest was asked %v; want GET /version only", got)
	}

	in := newTestInstaller(t, DefaultLimits())
	c := &guest.Client{Name: "guest001", Config: &rest.Config{Host: srv.URL}}
	approval := &approve.Approval{}
	cfg, err := in.configuration(c, "kube-system", newTrustView(driver.NewMemory(), "kube-vip", nil), approval)
	if err != nil {
		t.Fatal(err)
	}
	manifest := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kube-system\n---\n" +
		"apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: kube-vip\nspec:\n  unknownField: 1\n---\n" +
		"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: kube-vip\n"
	for _, validate := range []bool{true, false} {
		built, err := cfg.KubeClient.Build(bytes.NewBufferString(manifest), validate)
		if err != nil || len(built) != 3 {
			t.Errorf("Build (validate %t) = %d objects, %v; want 3", validate, len(built), err)
		}
	}
	if _, err := cfg.KubeClient.Build(bytes.NewBufferString("apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n"), false); !meta.IsNoMatchError(err) {
		t.Errorf("Build of a Secret: %v; want no mapping", err)
	}
	if _, ok := cfg.KubeClient.(*kube.Client); !ok {
		t.Errorf("Helm's client is %T", cfg.KubeClient)
	}
	if got := requests(); len(got) != 1 {
		t.Errorf("the guest was asked %v while Helm built objects; want nothing more", got)
	}
}
