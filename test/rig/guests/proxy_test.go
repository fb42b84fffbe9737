package guests

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestInSystemNamespace(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"api/v1/namespaces/kube-system/configmaps/kubevip", "api/v1/namespaces/ks-c-m-1/configmaps/kubevip"},
		{"apis/apps/v1/namespaces/kube-system/daemonsets/kube-vip", "apis/apps/v1/namespaces/ks-c-m-1/daemonsets/kube-vip"},
		{"api/v1/namespaces/kube-system", "api/v1/namespaces/ks-c-m-1"},
		{"api/v1/namespaces/default/configmaps/kube-system", "api/v1/namespaces/default/configmaps/kube-system"},
		{"api/v1/services", "api/v1/services"},
	} {
		if got := inSystemNamespace(c.path, "ks-c-m-1"); got != c.want {
			t.Errorf("inSystemNamespace(%q) = %q, want %q", c.path, got, c.want)
		}
		if got := inSystemNamespace(c.path, ""); got != c.path {
			t.Errorf("without a namespace of its own, %q became %q", c.path, got)
		}
	}
}

func TestRenameSystemNamespace(t *testing.T) {
	r := httptest.NewRequest("POST", "/api/v1/namespaces/kube-system/configmaps", strings.NewReader(`{"metadata":{"name":"kubevip","namespace":"kube-system"}}`))
	if err := renameSystemNamespace(r, "ks-c-m-1"); err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	if want := `{"metadata":{"name":"kubevip","namespace":"ks-c-m-1"}}`; string(body) != want || r.ContentLength != int64(len(want)) {
		t.Errorf("body %s (length %d), want %s", body, r.ContentLength, want)
	}
}
