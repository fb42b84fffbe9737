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
	write     map[string]bool
	remove    map[string]bool
}

// guardFor is the guard of one approved install or upgrade in namespace, for a guest whose API
// lies under prefix.
func guardFor(a *approve.Approval, namespace, prefix string) func(http.RoundTripper) http.RoundTripper {
	write, remove := map[string]bool{}, map[string]bool{}
	for _, o := range a.Objects {
		write[refKey(o.Group, o.Resource, o.Namespace, o.Name)] = true
	}
	for _, o := range a.Owned {
		if k := refKey(o.Group, o.Resource, o.Namespace, o.Name); !write[k] {
			remove[k] = true
		}
	}
	return func(base http.RoundTripper) http.RoundTripper {
		return &writeGuard{base: base, prefix: strings.TrimSuffix(prefix, "/"), namespace: namespace, write: write, remove: remove}
	}
}

func refKey(group, resource, namespace, name string) string {
	return group + "/" + resource + "/" + namespace + "/" + name
}

func (g *writeGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return g.base.RoundTrip(req)
	}
	path, under := strings.CutPrefix(req.URL.Path, g.prefix)
	target, ok := parseAPIPath(path)
	if !under || !ok || target.subresource != "" {
		return nil, &ErrWriteRefused{Method: req.Method, Object: redact.Shorten(req.URL.Path, 200)}
	}
	if req.Method == http.MethodPost && target.name == "" {
		name, body, err := createdName(req)
		if err != nil {
			return nil, err
		}
		req.Body = body
		target.name = name
	}
	key := refKey(target.group, target.resource, target.namespace, target.name)
	allowed := false
	switch req.Method {
	case http.MethodPost:
		allowed = g.write[key] || (target.group == "" && target.resource == "namespaces" && target.name == g.namespace)
	case http.MethodPut, http.MethodPatch:
		allowed = g.write[key]
	case http.MethodDelete:
		allowed = g.remove[key]
	}
	if !allowed {
		return nil, &ErrWriteRefused{Method: req.Method, Object: redact.Shorten(target.String(), 200)}
	}
	return g.base.RoundTrip(req)
}

// apiTarget is what an API path names.
type apiTarget struct {
	group, resource, namespace, name, subresource string
}

func (t apiTarget) String() string {
	res := t.resource
	if t.group != "" {
		res += "." + t.group
	}
	if t.namespace != "" {
		return res + " " + t.namespace + "/" + t.name
	}
	return res + " " + t.name
}

// parseAPIPath reads /api/v1/... and /apis/<group>/<version>/... paths.
func parseAPIPath(p string) (apiTarget, bool) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	var t apiTarget
	switch {
	case len(parts) >= 3 && parts[0] == "api" && parts[1] == "v1":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		t.group, parts = parts[1], parts[3:]
	default:
		return t, false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		t.namespace, parts = parts[1], parts[2:]
	}
	switch len(parts) {
	case 1:
		t.resource = parts[0]
	case 2:
		t.resource, t.name = parts[0], parts[1]
	case 3:
		t.resource, t.name, t.subresource = parts[0], parts[1], parts[2]
	default:
		return t, false
	}
	return t, true
}

// createdName reads the name of the object a create request sends, and gives the body back.
func createdName(req *http.Request) (string, io.ReadCloser, error) {
	if req.Body == nil {
		return "", nil, &ErrWriteRefused{Method: req.Method, Object: req.URL.Path}
	}
	data, err := io.ReadAll(io.LimitReader(req.Body, maxGuardedBody+1))
	req.Body.Close()
	if err != nil || len(data) > maxGuardedBody {
		return "", nil, &ErrWriteRefused{Method: req.Method, Object: req.URL.Path}
	}
	var head struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if json.Unmarshal(data, &head) != nil || head.Metadata.Name == "" {
		return "", nil, &ErrWriteRefused{Method: req.Method, Object: req.URL.Path}
	}
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	return head.Metadata.Name, io.NopCloser(bytes.NewReader(data)), nil
}
