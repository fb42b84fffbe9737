package integration

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubefip/kube-fip-operator/pkg/testenv"
)

// apiRequest is one request the operator made to the management cluster's API server.
type apiRequest struct {
	method, path, query, accept string
}

// recordingProxy forwards the operator's requests to the test API server as its administrator and
// keeps what each one asked for.
type recordingProxy struct {
	mu       sync.Mutex
	requests []apiRequest
}

func (r *recordingProxy) secretRequests() []apiRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []apiRequest
	for _, q := range r.requests {
		if strings.HasPrefix(q.path, "/api/v1/secrets") || strings.Contains(q.path, "/secrets") && strings.HasPrefix(q.path, "/api/v1/namespaces/") {
			out = append(out, q)
		}
	}
	return out
}

// startRecordingProxy serves the API server on a loopback port and returns a kubeconfig file for
// it: the operator talks through it without credentials of its own.
func startRecordingProxy(t *testing.T) (*recordingProxy, string) {
	t.Helper()
	target, err := url.Parse(shared.env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(shared.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingProxy{}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			rec.mu.Lock()
			rec.requests = append(rec.requests, apiRequest{pr.In.Method, pr.In.URL.Path, pr.In.URL.RawQuery, pr.In.Header.Get("Accept")})
			rec.mu.Unlock()
		},
		Transport:     transport,
		FlushInterval: -1,
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	kc := clientcmdapi.NewConfig()
	kc.Clusters["recorded"] = &clientcmdapi.Cluster{Server: "http://" + l.Addr().String()}
	kc.AuthInfos["recorded"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["recorded"] = &clientcmdapi.Context{Cluster: "recorded", AuthInfo: "recorded"}
	kc.CurrentContext = "recorded"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return rec, path
}

// TestSecretsAreCachedAsMetadataOnly runs the operator through a recording proxy while it
// configures a guest and follows a kubeconfig rotation. Every list and watch of Secrets asks for
// metadata only, and the only Secret whose data the operator reads is the guest's kubeconfig, with
// a GET by name.
func TestSecretsAreCachedAsMetadataOnly(t *testing.T) {
	f := newFixture(t, "c-m-secmeta")
	proxy := startProxy(t)
	gc := rancherCluster(t, proxy, "secmeta", "c-m-secmeta1", nil, startGuest(t, "secmeta"))
	f.extraNamespace(gc.id)
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "600", "kubevipGuestInstall": "disabled"})

	rec, kubeconfig := startRecordingProxy(t)
	port := freePort(t)
	// The last --kubeconfig wins: the operator talks only through the recording proxy.
	p := startOperator(t, f.ns, port, append(testenv.LoopbackChartSourceArgs(), "--kubeconfig", kubeconfig)...)
	if err := p.WaitForLog(t.Context(), "controllers running", time.Minute); err != nil {
		t.Fatal(err)
	}
	f.createRange("secmeta", "10.154.0.0/28")
	f.createFIPIn(gc.id, "secmeta-kubevip", "secmeta", "10.154.0.2")
	gc.waitCIDR(t, "10.154.0.2/32", 30*time.Second)

	// A rotation is noticed through the metadata informer, and the new kubeconfig read with a GET:
	// the interval is ten minutes, so only the rotation can bring the deleted ConfigMap back.
	if err := gc.direct.CoreV1().ConfigMaps("kube-system").Delete(t.Context(), "kubevip", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gc.rotate(t, proxy)
	gc.waitCIDR(t, "10.154.0.2/32", 30*time.Second)

	var metadataWatches, kubeconfigGets int
	for _, q := range rec.secretRequests() {
		metadataOnly := strings.Contains(q.accept, "as=PartialObjectMetadata")
		name := q.path[strings.LastIndex(q.path, "/secrets")+len("/secrets"):]
		switch {
		case metadataOnly:
			metadataWatches++
		case q.method == http.MethodGet && name == "/"+gc.name+"-kubeconfig":
			kubeconfigGets++
		default:
			t.Errorf("the operator read Secret data beyond the kubeconfig it needs: %s %s?%s (Accept %q)", q.method, q.path, q.query, q.accept)
		}
	}
	if metadataWatches == 0 {
		t.Error("no metadata-only list or watch of Secrets: a kubeconfig rotation could not be noticed")
	}
	if kubeconfigGets < 2 {
		t.Errorf("the kubeconfig Secret was read %d times; want a GET for the first pass and one after the rotation", kubeconfigGets)
	}
	t.Logf("Secret requests: %d metadata-only lists and watches, %d GETs of the kubeconfig", metadataWatches, kubeconfigGets)
}
