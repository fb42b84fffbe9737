package helminstall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/approve"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// ErrWriteRefused means Helm asked the guest to write something the install policy did not approve.
// It cannot happen while Helm applies only the approved manifest; the guard is what makes sure.
type ErrWriteRefused struct {
	Method string
	Object string
}

func (e *ErrWriteRefused) Error() string {
	return fmt.Sprintf("the operator refused to send %s %s to the guest: it is not an object the install policy approved", e.Method, e.Object)
}

// maxGuardedBody bounds a create request's body the guard reads for the object's name.
const maxGuardedBody = 4 << 20

// writeGuard sits under Helm's Kubernetes client, the last step before the guest: reads pass;
// creates, updates and patches pass only for the approved objects (and the release's namespace);
// deletes only for objects the chart may own but no longer renders. Nothing reaches the guest
// around the policy: no hook, CRD, or object of a manifest the operator did not approve.
type writeGuard struct {
	base http.RoundTripper
	// prefix is the path of the guest's API under its server URL: Rancher's /k8s/clusters/<id>.
	prefix    string
	namespace string
	write     map[approve.ObjectRef]bool
	remove    map[approve.ObjectRef]bool
}

// guardFor is the guard of one approved install or upgrade in namespace, for a guest whose API
// lies under prefix.
func guardFor(a *approve.Approval, namespace, prefix string) func(http.RoundTripper) http.RoundTripper {
	write, remove := map[approve.ObjectRef]bool{}, map[approve.ObjectRef]bool{}
	for _, o := range a.Objects {
		write[o] = true
	}
	for _, o := range a.Owned {
		if !write[o] {
			remove[o] = true
		}
	}
	return func(base http.RoundTripper) http.RoundTripper {
		return &writeGuard{base: base, prefix: strings.TrimSuffix(prefix, "/"), namespace: namespace, write: write, remove: remove}
	}
}

func (g *writeGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return g.base.RoundTrip(req)
	}
	path, under := strings.CutPrefix(req.URL.Path, g.prefix)
	target, ok := parseAPIPath(path)
	if !under || !ok {
		return nil, &ErrWriteRefused{Method: req.Method, Object: redact.Shorten(req.URL.Path, 200)}
	}
	if req.Method == http.MethodPost && target.Name == "" {
		name, body, err := createdName(req)
		if err != nil {
			return nil, err
		}
		req.Body = body
		target.Name = name
	}
	allowed := false
	switch req.Method {
	case http.MethodPost:
		allowed = g.write[target] || target == approve.ObjectRef{Version: "v1", Resource: "namespaces", Name: g.namespace}
	case http.MethodPut, http.MethodPatch:
		allowed = g.write[target]
	case http.MethodDelete:
		allowed = g.remove[target]
	}
	if !allowed {
		return nil, &ErrWriteRefused{Method: req.Method, Object: redact.Shorten(target.String(), 200)}
	}
	return g.base.RoundTrip(req)
}

// parseAPIPath reads the object an /api/v1/... or /apis/<group>/<version>/... path names; a
// subresource's path names none.
func parseAPIPath(p string) (approve.ObjectRef, bool) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	var t approve.ObjectRef
	switch {
	case len(parts) >= 3 && parts[0] == "api" && parts[1] == "v1":
		t.Version, parts = "v1", parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		t.Group, t.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return t, false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		t.Namespace, parts = parts[1], parts[2:]
	}
	switch len(parts) {
	case 1:
		t.Resource = parts[0]
	case 2:
		t.Resource, t.Name = parts[0], parts[1]
	default:
		return t, false
	}
	return t, true
}

// createdName reads the name of the object a create request sends, and gives the body back.
func createdName(req *http.Request) (string, io.ReadCloser, error) {
	refused := &ErrWriteRefused{Method: req.Method, Object: redact.Shorten(req.URL.Path, 200)}
	if req.Body == nil {
		return "", nil, refused
	}
	data, err := io.ReadAll(io.LimitReader(req.Body, maxGuardedBody+1))
	req.Body.Close()
	var head struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err != nil || len(data) > maxGuardedBody || json.Unmarshal(data, &head) != nil || head.Metadata.Name == "" {
		return "", nil, refused
	}
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	return head.Metadata.Name, io.NopCloser(bytes.NewReader(data)), nil
}
