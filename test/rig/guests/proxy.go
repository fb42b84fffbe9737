package guests

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

// ProxyMode is how the test cluster proxy answers for one cluster.
type ProxyMode int

const (
	// ProxyConnected forwards to the guest API server as the cluster's Rancher user.
	ProxyConnected ProxyMode = iota
	// ProxyNotProvisioned answers 503 ClusterUnavailable "cluster not provisioned", as Rancher does
	// until the management cluster's Provisioned condition is True.
	ProxyNotProvisioned
	// ProxyDisconnected holds a request for DisconnectDelay, then answers 500 "cluster agent
	// disconnected" in plain text, as Rancher does when the agent's tunnel is gone.
	ProxyDisconnected
)

// ClusterOwnerRole is the ClusterRole Rancher's cluster-owner role template becomes in a guest.
const ClusterOwnerRole = "cluster-owner"

// ClusterProxy stands in for Rancher's cluster proxy as rancher/rancher pkg/clusterrouter serves it
// (read at commit 59bd052e): /k8s/clusters/<id>/... on a loopback port over HTTPS. It checks the
// bearer token Rancher issued for the cluster (401 with Rancher's JSON error otherwise), answers 503
// before the cluster is provisioned and 500 for a broken tunnel, and otherwise forwards to the
// guest impersonating the token's Rancher user, so the guest's own RBAC decides, and a 403 comes
// only from there.
type ClusterProxy struct {
	URL string

	server   *httptest.Server
	caPEM    []byte
	mu       sync.Mutex
	clusters map[string]*proxied
	// DisconnectDelay is how long a disconnected cluster keeps a request before failing it (Rancher
	// waits 20-40 s for the tunnel).
	DisconnectDelay time.Duration
	// requests counts the requests forwarded to every guest, by method and resource.
	requests sync.Map // string → *atomic.Int64
}

// Requests are the requests forwarded to the guests since the last ResetRequests, by method and
// API resource ("GET configmaps", "WATCH services"): what the operator asks of the guests, counted where Rancher's
// proxy would see it.
func (p *ClusterProxy) Requests() map[string]int64 {
	out := map[string]int64{}
	p.requests.Range(func(k, v interface{}) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// ResetRequests starts counting the guests' requests anew.
func (p *ClusterProxy) ResetRequests() { p.requests.Clear() }

// count adds one request of method for the API path path.
func (p *ClusterProxy) count(method, path string) {
	key := method + " " + apiResource(path)
	v, _ := p.requests.LoadOrStore(key, &atomic.Int64{})
	v.(*atomic.Int64).Add(1)
}

// apiResource names the resource an API path is about: "configmaps" of
// api/v1/namespaces/kube-system/configmaps, "daemonsets" of apis/apps/v1/namespaces/x/daemonsets/y,
// and the path itself for anything else.
func apiResource(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return path
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	if len(parts) == 0 {
		return path
	}
	return parts[0]
}

type proxied struct {
	token    string
	user     string
	mode     ProxyMode
	name     string
	config   *rest.Config
	proxy    *httputil.ReverseProxy
	rejected atomic.Int64
	// discovery counts the requests for API discovery or OpenAPI documents.
	discovery atomic.Int64
	// flood is the list of API groups the proxy answers for /apis, when set (SetDiscoveryFlood).
	flood []byte
	// systemNamespace, when set, stands in for kube-system in every path (RegisterSharing).
	systemNamespace string
	// services is how the proxy answers lists of Services (SetServicePages), and their count.
	services serviceLists
}

// StartClusterProxy starts a proxy on a free loopback port. It speaks HTTPS, as Rancher does
// (client-go sends a bearer token only over TLS), with a certificate of its own that the
// kubeconfigs it writes trust.
func StartClusterProxy() (*ClusterProxy, error) {
	p := &ClusterProxy{clusters: map[string]*proxied{}, DisconnectDelay: 2 * time.Second}
	p.server = httptest.NewUnstartedServer(p)
	p.server.StartTLS()
	p.URL = p.server.URL
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.server.Certificate().Raw})
	return p, nil
}

// StartClusterProxyOn starts a proxy listening on l, serving cert (whose CA, caPEM, the kubeconfigs
// it writes trust): for pods of a test cluster, which reach the proxy at an address of the host's
// on the cluster's network rather than on loopback.
func StartClusterProxyOn(l net.Listener, cert tls.Certificate, caPEM []byte) *ClusterProxy {
	p := &ClusterProxy{clusters: map[string]*proxied{}, DisconnectDelay: 2 * time.Second, caPEM: caPEM}
	p.server = &httptest.Server{Listener: l, Config: &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second},
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	p.server.StartTLS()
	p.URL = "https://" + l.Addr().String()
	return p
}

// Close stops the proxy.
func (p *ClusterProxy) Close() error {
	p.server.Close()
	return nil
}

// RancherUser is the Rancher user the proxy impersonates in cluster id's guest.
func RancherUser(id string) string { return "u-" + strings.TrimPrefix(id, "c-m-") }

// Register makes cluster id reach guest g with token, connected. As Rancher does for the user who
// created the cluster, the user gets cluster-owner rights in the guest.
func (p *ClusterProxy) Register(id string, g *controlplane.Guest, token string) error {
	return p.RegisterConfig(id, g.Name, g.Config, token)
}

// RegisterConfig is Register for any guest API server an administrator reaches with cfg.
func (p *ClusterProxy) RegisterConfig(id, name string, cfg *rest.Config, token string) error {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return err
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return err
	}
	user := RancherUser(id)
	if err := grantClusterOwner(name, cfg, user); err != nil {
		return err
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	p.mu.Lock()
	defer p.mu.Unlock()
	// A registration is a working tunnel: the cluster is connected from now on.
	p.clusters[id] = &proxied{token: token, user: user, mode: ProxyConnected, name: name, config: cfg, proxy: rp}
	return nil
}

// RegisterSharing is Register for a guest API server that answers for many clusters at once, as
// the benchmarks' thousands of clusters share a few: each cluster gets a kube-system of its own,
// the namespace systemNamespace of the shared server (created here), which the proxy puts in
// place of kube-system in every path it forwards, and in the namespace an object created or
// updated there names, so that each cluster's kube-vip ConfigMap and DaemonSets are its own, as in
// a guest of its own. Answers name the namespace as it is.
func (p *ClusterProxy) RegisterSharing(id string, g *controlplane.Guest, token, systemNamespace string) error {
	kube, err := kubernetes.NewForConfig(g.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s in guest %s: %w", systemNamespace, g.Name, err)
	}
	if err := p.Register(id, g, token); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clusters[id].systemNamespace = systemNamespace
	return nil
}

// renameSystemNamespace puts ns in place of kube-system as the namespace an object in the body of
// a create or update names, which the API server holds to the request's path.
func renameSystemNamespace(r *http.Request, ns string) error {
	if r.Body == nil || (r.Method != http.MethodPost && r.Method != http.MethodPut) {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	r.Body.Close()
	if err != nil {
		return err
	}
	body = bytes.ReplaceAll(body, []byte(`"namespace":"kube-system"`), []byte(`"namespace":"`+ns+`"`))
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// inSystemNamespace is path with kube-system replaced by ns, where a path names it as a namespace.
func inSystemNamespace(path, ns string) string {
	if ns == "" {
		return path
	}
	parts := strings.Split(path, "/")
	for i := 1; i < len(parts); i++ {
		if parts[i-1] == "namespaces" && parts[i] == "kube-system" {
			parts[i] = ns
		}
	}
	return strings.Join(parts, "/")
}

func grantClusterOwner(name string, cfg *rest.Config, user string) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ClusterOwnerRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
			{NonResourceURLs: []string{"*"}, Verbs: []string{"*"}},
		},
	}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the cluster-owner role in guest %s: %w", name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: clusterOwnerBinding(user)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ClusterOwnerRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("binding %s to cluster-owner in guest %s: %w", user, name, err)
	}
	// The API server's authorizer learns of the binding from its informer: wait until it judges by
	// it, so that a registered cluster is owned from the first request through the proxy.
	return waitAuthorized(ctx, kube, name, user, true)
}

// waitAuthorized waits until the guest's authorizer lets user list ConfigMaps in kube-system (the
// operator's probe) or, with allowed false, no longer does.
func waitAuthorized(ctx context.Context, kube kubernetes.Interface, guest, user string, allowed bool) error {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "list", Resource: "configmaps"}}}
	return rig.UntilEvery(20*time.Millisecond, time.Hour, fmt.Sprintf("guest %s judging %s as cluster-owner=%t", guest, user, allowed), ctx.Err, func() (bool, error) {
		got, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		return err == nil && got.Status.Allowed == allowed, err
	})
}

// guestClient is cluster id's guest entry and a client of its API server.
func (p *ClusterProxy) guestClient(id string) (*proxied, kubernetes.Interface, error) {
	p.mu.Lock()
	c, ok := p.clusters[id]
	p.mu.Unlock()
	if !ok || c.config == nil {
		return nil, nil, fmt.Errorf("cluster %s has no guest", id)
	}
	kube, err := kubernetes.NewForConfig(c.config)
	return c, kube, err
}

func clusterOwnerBinding(user string) string { return "cluster-owner-" + user }

// RevokeClusterOwner removes the cluster-owner binding of cluster id's Rancher user in its guest,
// as happens when the cluster's owner is removed from it in Rancher.
func (p *ClusterProxy) RevokeClusterOwner(id string) error {
	c, kube, err := p.guestClient(id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kube.RbacV1().ClusterRoleBindings().Delete(ctx, clusterOwnerBinding(c.user), metav1.DeleteOptions{}); err != nil {
		return err
	}
	return waitAuthorized(ctx, kube, c.name, c.user, false)
}

// SetToken replaces the cluster's token: the old one is rejected from now on.
func (p *ClusterProxy) SetToken(id, token string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clusters[id]; ok {
		c.token = token
	}
}

// SetMode sets how the proxy answers for the cluster.
func (p *ClusterProxy) SetMode(id string, mode ProxyMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clusters[id]; ok {
		c.mode = mode
	}
}

// Rejected counts the requests for the cluster refused for a wrong token.
func (p *ClusterProxy) Rejected(id string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clusters[id]; ok {
		return c.rejected.Load()
	}
	return 0
}

// Kubeconfig is the kubeconfig Rancher writes into the cluster's <name>-kubeconfig Secret (key
// "value"): cluster "cluster" at <server>/k8s/clusters/<id> with the CA, user "user" with the token,
// context "default".
func (p *ClusterProxy) Kubeconfig(id, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: p.URL + "/k8s/clusters/" + id, CertificateAuthorityData: p.caPEM}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["default"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "user"}
	cfg.CurrentContext = "default"
	return clientcmd.Write(*cfg)
}

func (p *ClusterProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, hasToken := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	rest, ok := strings.CutPrefix(r.URL.Path, "/k8s/clusters/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	id, path, _ := strings.Cut(rest, "/")
	p.mu.Lock()
	c, known := p.clusters[id]
	var want string
	var mode ProxyMode
	var flood []byte
	var systemNamespace string
	if known {
		want, mode, flood, systemNamespace = c.token, c.mode, c.flood, c.systemNamespace
	}
	p.mu.Unlock()

	// Rancher authenticates the token before it looks at the cluster.
	if !hasToken || !known || subtle.ConstantTimeCompare([]byte(token), []byte(want)) != 1 {
		if known {
			c.rejected.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"type":"error","status":"401","message":"Unauthorized 401: must authenticate"}`)
		return
	}
	switch mode {
	case ProxyNotProvisioned:
		// norman's httperror.ClusterUnavailable, written before any Content-Type is set.
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"Code":{"Code":"ClusterUnavailable","Status":503},"Message":"cluster not provisioned","Cause":null,"FieldName":""}`)
		return
	case ProxyDisconnected:
		select {
		case <-time.After(p.DisconnectDelay):
		case <-r.Context().Done():
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "cluster agent disconnected")
		return
	}
	if isDiscovery(path) {
		c.discovery.Add(1)
	}
	if c.serveFlood(w, path, flood) || c.serveServices(w, r, path) {
		return
	}
	method := r.Method
	if r.URL.Query().Get("watch") == "true" {
		method = "WATCH" // as the API server's audit log and apiserver_request_total name it
	}
	p.count(method, path)
	r.Header.Del("Authorization")
	r.Header.Set("Impersonate-User", c.user)
	r.Header.Del("Impersonate-Group")
	r.Header.Add("Impersonate-Group", "system:authenticated")
	r.Header.Add("Impersonate-Group", "system:cattle:authenticated")
	if rewritten := inSystemNamespace(path, systemNamespace); rewritten != path {
		path = rewritten
		if err := renameSystemNamespace(r, systemNamespace); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	r.URL.Path = "/" + path
	r.URL.RawPath = ""
	c.proxy.ServeHTTP(w, r)
}
