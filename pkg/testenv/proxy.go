package testenv

import (
	"crypto/subtle"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ProxyMode is how the test cluster proxy answers for one cluster.
type ProxyMode int

const (
	// ProxyConnected forwards to the guest API server.
	ProxyConnected ProxyMode = iota
	// ProxyDisconnected waits, then answers 500, as Rancher does when a cluster's agent is gone.
	ProxyDisconnected
	// ProxyProvisioning answers 403, as Rancher does while a cluster is being provisioned.
	ProxyProvisioning
)

// ClusterProxy stands in for Rancher's cluster proxy: it serves /k8s/clusters/<id>/... on a
// loopback port, checks the bearer token Rancher would have issued for the cluster, and forwards
// to that guest's API server.
type ClusterProxy struct {
	URL string

	server   *httptest.Server
	caPEM    []byte
	mu       sync.Mutex
	clusters map[string]*proxied
	// DisconnectDelay is how long a disconnected cluster keeps a request before failing it.
	DisconnectDelay time.Duration
}

type proxied struct {
	token    string
	mode     ProxyMode
	target   *url.URL
	proxy    *httputil.ReverseProxy
	rejected atomic.Int64
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

// Close stops the proxy.
func (p *ClusterProxy) Close() error {
	p.server.Close()
	return nil
}

// Register makes cluster id reach guest g with token.
func (p *ClusterProxy) Register(id string, g *Guest, token string) error {
	target, err := url.Parse(g.Config.Host)
	if err != nil {
		return err
	}
	transport, err := rest.TransportFor(g.Config)
	if err != nil {
		return err
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clusters[id] = &proxied{token: token, target: target, proxy: rp}
	return nil
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

// Kubeconfig is the kubeconfig Rancher writes into the cluster's <name>-kubeconfig Secret.
func (p *ClusterProxy) Kubeconfig(id, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[id] = &clientcmdapi.Cluster{Server: p.URL + "/k8s/clusters/" + id, CertificateAuthorityData: p.caPEM}
	cfg.AuthInfos[id] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[id] = &clientcmdapi.Context{Cluster: id, AuthInfo: id}
	cfg.CurrentContext = id
	return clientcmd.Write(*cfg)
}

func (p *ClusterProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/k8s/clusters/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	id, path, _ := strings.Cut(rest, "/")
	p.mu.Lock()
	c, ok := p.clusters[id]
	var token string
	var mode ProxyMode
	if ok {
		token, mode = c.token, c.mode
	}
	p.mu.Unlock()
	if !ok {
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("cluster %s not found", id))
		return
	}
	got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
		c.rejected.Add(1)
		writeStatus(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
		return
	}
	switch mode {
	case ProxyDisconnected:
		select {
		case <-time.After(p.DisconnectDelay):
		case <-r.Context().Done():
			return
		}
		http.Error(w, "cluster agent disconnected", http.StatusInternalServerError)
		return
	case ProxyProvisioning:
		writeStatus(w, http.StatusForbidden, "Forbidden", "clusters.management.cattle.io \""+id+"\" is forbidden: cluster is provisioning")
		return
	}
	r.Header.Del("Authorization")
	r.URL.Path = "/" + path
	r.URL.RawPath = ""
	c.proxy.ServeHTTP(w, r)
}

// writeStatus answers with a Kubernetes Status object, so that clients classify the error.
func writeStatus(w http.ResponseWriter, code int, reason, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":%q,"reason":%q,"code":%d}`, message, reason, code)
}
