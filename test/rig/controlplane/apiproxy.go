package controlplane

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// APIRequest is one request a client made through an APIProxy.
type APIRequest struct {
	Method, Path, Query, Accept string
}

// APIResponse is the API server's answer to one request made through an APIProxy.
type APIResponse struct {
	Method, Path, Query string
	Code                int
}

// APIProxy stands between a client (the operator) and the test API server. It forwards every
// request, records what each asked for, and can hold back what the watches of one resource
// deliver: the client's cache then lags the API server for as long as the test wants, as it does
// for a moment in a real cluster, so the client's next write meets a conflict.
type APIProxy struct {
	// URL is the proxy's address, https on 127.0.0.1 (client-go sends credentials only over
	// https).
	URL string

	srv *httptest.Server

	mu        sync.Mutex
	requests  []APIRequest
	responses []APIResponse
	// held maps a resource (its plural name) to a channel closed when it is released; heldLists
	// the same for its lists.
	held      map[string]chan struct{}
	heldLists map[string]chan struct{}
}

// StartAPIProxy serves cfg's API server on a loopback port. With asAdmin, requests are made with
// cfg's credentials and the client needs none; otherwise only cfg's CA is used and each client's
// own Authorization goes through, so the API server judges the client itself.
func StartAPIProxy(cfg *rest.Config, asAdmin bool) (*APIProxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	transportConfig := cfg
	if !asAdmin {
		transportConfig = &rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData, CAFile: cfg.CAFile}}
	}
	transport, err := rest.TransportFor(transportConfig)
	if err != nil {
		return nil, err
	}
	p := &APIProxy{held: map[string]chan struct{}{}, heldLists: map[string]chan struct{}{}}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = target.Host
			p.mu.Lock()
			p.requests = append(p.requests, APIRequest{pr.In.Method, pr.In.URL.Path, pr.In.URL.RawQuery, pr.In.Header.Get("Accept")})
			p.mu.Unlock()
		},
		ModifyResponse: func(resp *http.Response) error {
			p.mu.Lock()
			p.responses = append(p.responses, APIResponse{resp.Request.Method, resp.Request.URL.Path, resp.Request.URL.RawQuery, resp.StatusCode})
			p.mu.Unlock()
			q := resp.Request.URL.Query()
			resource := path.Base(resp.Request.URL.Path)
			switch w := q.Get("watch"); {
			case w == "true" || w == "1":
				resp.Body = &heldBody{ReadCloser: resp.Body, gate: func() chan struct{} { return p.gate(p.held, resource) }}
			case resp.Request.Method == http.MethodGet:
				// A GET of a single object ends in its name, not the resource: only lists match.
				resp.Body = &heldBody{ReadCloser: resp.Body, gate: func() chan struct{} { return p.gate(p.heldLists, resource) }}
			}
			return nil
		},
		Transport:     transport,
		FlushInterval: -1,
	}
	p.srv = httptest.NewUnstartedServer(proxy)
	p.srv.StartTLS()
	p.URL = p.srv.URL
	return p, nil
}

// Requests is every request so far.
func (p *APIProxy) Requests() []APIRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]APIRequest(nil), p.requests...)
}

// Responses is every answer so far, in the order the API server gave them.
func (p *APIProxy) Responses() []APIResponse {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]APIResponse(nil), p.responses...)
}

// Hold stops delivering what watches of resource (a plural name, such as "floatingipranges")
// receive from now on, until Release.
func (p *APIProxy) Hold(resource string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	holdIn(p.held, resource)
}

// HoldReads is Hold for lists of resource too: a client starting its informer of resource then
// gets nothing, by list or by watch, until Release, as when an API server is slow to answer.
func (p *APIProxy) HoldReads(resource string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	holdIn(p.held, resource)
	holdIn(p.heldLists, resource)
}

// Release delivers what was held for resource, and everything after it.
func (p *APIProxy) Release(resource string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	releaseIn(p.held, resource)
	releaseIn(p.heldLists, resource)
}

func holdIn(held map[string]chan struct{}, resource string) {
	if _, ok := held[resource]; !ok {
		held[resource] = make(chan struct{})
	}
}

func releaseIn(held map[string]chan struct{}, resource string) {
	if ch, ok := held[resource]; ok {
		close(ch)
		delete(held, resource)
	}
}

func (p *APIProxy) gate(held map[string]chan struct{}, resource string) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return held[resource]
}

// Close releases every watch and stops the proxy.
func (p *APIProxy) Close() error {
	p.mu.Lock()
	for _, held := range []map[string]chan struct{}{p.held, p.heldLists} {
		for resource := range held {
			releaseIn(held, resource)
		}
	}
	p.mu.Unlock()
	p.srv.Close()
	return nil
}

// heldBody is a watch's or a list's response body. Bytes read while the resource is held are
// delivered only once it is released: a held request still reads from the API server, but the
// client sees nothing.
type heldBody struct {
	io.ReadCloser
	// gate is the channel to wait on while the resource is held, nil when it is not.
	gate func() chan struct{}
}

func (b *heldBody) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	for {
		ch := b.gate()
		if ch == nil {
			return n, err
		}
		<-ch
	}
}

// WriteKubeconfig writes to path a kubeconfig for the proxy, with token as the client's bearer
// token ("" for none, when the proxy acts as administrator). The file is written with mode 0600.
func (p *APIProxy) WriteKubeconfig(path, token string) error {
	kc := clientcmdapi.NewConfig()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.URL, CertificateAuthorityData: ca}
	kc.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	kc.CurrentContext = "proxy"
	return clientcmd.WriteToFile(*kc, path)
}
