package helminstall

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/approve"
)

// passed records what reached the guest through the guard.
type passed struct{ requests []string }

func (p *passed) RoundTrip(req *http.Request) (*http.Response, error) {
	body := ""
	if req.Body != nil {
		data, _ := io.ReadAll(req.Body)
		body = string(data)
	}
	p.requests = append(p.requests, req.Method+" "+req.URL.Path+" "+body)
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

// TestWriteGuard: under Helm's client, only the approved objects are written (and the release's
// namespace created), only objects the chart may own but no longer renders are deleted, and reads
// pass; everything else is refused before it reaches the guest.
func TestWriteGuard(t *testing.T) {
	t.Parallel()
	approval := &approve.Approval{
		Objects: []approve.ObjectRef{
			{Group: "apps", Version: "v1", Resource: "daemonsets", Namespace: "kube-system", Name: "kube-fip-kube-vip"},
			{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles", Name: "kube-fip-kube-vip"},
		},
		Owned: []approve.ObjectRef{
			{Group: "apps", Version: "v1", Resource: "daemonsets", Namespace: "kube-system", Name: "kube-fip-kube-vip"},
			{Group: "monitoring.coreos.com", Version: "v1", Resource: "podmonitors", Namespace: "kube-system", Name: "kube-fip-kube-vip"},
		},
	}
	const prefix = "/k8s/clusters/c-m-abc"
	for _, tc := range []struct {
		method, path, body string
		allowed            bool
	}{
		{"GET", prefix + "/api/v1/namespaces/kube-system/secrets/anything", "", true},
		{"POST", prefix + "/apis/apps/v1/namespaces/kube-system/daemonsets", `{"metadata":{"name":"kube-fip-kube-vip"}}`, true},
		{"PATCH", prefix + "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-fip-kube-vip", "{}", true},
		{"PATCH", prefix + "/apis/rbac.authorization.k8s.io/v1/clusterroles/kube-fip-kube-vip", "{}", true},
		{"POST", prefix + "/api/v1/namespaces", `{"metadata":{"name":"kube-system"}}`, true},
		{"DELETE", prefix + "/apis/monitoring.coreos.com/v1/namespaces/kube-system/podmonitors/kube-fip-kube-vip", "", true},
		// A hook's Job, a CRD, a planted record's objects, another namespace, a subresource.
		{"POST", prefix + "/apis/batch/v1/namespaces/kube-system/jobs", `{"metadata":{"name":"hook"}}`, false},
		{"POST", prefix + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", `{"metadata":{"name":"x.example.com"}}`, false},
		{"DELETE", prefix + "/api/v1/namespaces/kube-system/configmaps/coredns", "", false},
		{"DELETE", prefix + "/api/v1/namespaces/cattle-system", "", false},
		{"DELETE", prefix + "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-fip-kube-vip", "", false},
		{"POST", prefix + "/apis/apps/v1/namespaces/default/daemonsets", `{"metadata":{"name":"kube-fip-kube-vip"}}`, false},
		{"POST", prefix + "/api/v1/namespaces", `{"metadata":{"name":"cattle-system"}}`, false},
		{"PUT", prefix + "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-fip-kube-vip/status", "{}", false},
		{"PATCH", "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-fip-kube-vip", "{}", false},
		{"POST", prefix + "/apis/apps/v1/namespaces/kube-system/daemonsets", `not json`, false},
	} {
		base := &passed{}
		rt := guardFor(approval, "kube-system", prefix)(base)
		req, err := http.NewRequest(tc.method, "https://rancher.example"+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		var refused *ErrWriteRefused
		switch {
		case tc.allowed && (err != nil || len(base.requests) != 1):
			t.Errorf("%s %s: %v; want it sent", tc.method, tc.path, err)
		case tc.allowed && tc.body != "" && !strings.HasSuffix(base.requests[0], tc.body):
			t.Errorf("%s %s: sent %q; want the body as Helm gave it", tc.method, tc.path, base.requests[0])
		case !tc.allowed && (!errors.As(err, &refused) || len(base.requests) != 0):
			t.Errorf("%s %s: %v, %d requests reached the guest; want it refused", tc.method, tc.path, err, len(base.requests))
		}
	}
}
