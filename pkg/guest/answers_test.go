package guest

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// answeringGuest is a guest behind a Rancher at a loopback address whose API server answers every
// GET of a DaemonSet with body, of contentType; it keeps the Accept header of each request.
func answeringGuest(t *testing.T, contentType string, body func() string) (*Client, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var accepts []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		accepts = append(accepts, r.Header.Get("Accept"))
		mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write([]byte(body()))
	}))
	t.Cleanup(srv.Close)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: srv.URL + "/k8s/clusters/c-m-abc",
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: "token-abc:secret"}
	cfg.Contexts["default"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "user"}
	cfg.CurrentContext = "default"
	c, err := NewClient(nil, Target{Name: "guest", ClusterID: "c-m-abc", Kubeconfig: write(t, cfg), Rancher: []string{srv.URL}}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), accepts...)
	}
}

// TestGuestAnswersAreBoundedInWhatTheyHold: the client asks a guest for JSON only; an answer of
// many empty objects within the byte bound, each of which decodes into a container of 408 bytes,
// is refused by its values before it takes the operator's memory; an answer in protobuf is
// refused; an ordinary object is read.
func TestGuestAnswersAreBoundedInWhatTheyHold(t *testing.T) {
	const head = `{"kind":"DaemonSet","apiVersion":"apps/v1","metadata":{"name":"kube-vip","namespace":"kube-system"},"spec":{"template":{"spec":{"containers":[`
	empties := func() string { return head + strings.Repeat("{},", 300000) + "{}]}}}}" }
	c, accepts := answeringGuest(t, "application/json", empties)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := c.Apps.DaemonSets("kube-system").Get(context.Background(), "kube-vip", metav1.GetOptions{})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrGuestResponseTooLarge) {
		t.Errorf("a DaemonSet of 300000 empty containers (%d KiB): %v; want ErrGuestResponseTooLarge", len(empties())>>10, err)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a DaemonSet of 300000 empty containers (%d KiB): %d MiB allocated reading it: %v", len(empties())>>10, allocated>>20, err)
	if allocated > 32<<20 {
		t.Errorf("reading it allocated %d MiB", allocated>>20)
	}
	for _, a := range accepts() {
		if a != "application/json" {
			t.Errorf("the client asked for %q; want JSON only", a)
		}
	}

	// Just within the bound, what the decoded answer holds is what the budget counts on.
	within := func() string { return head + strings.Repeat("{},", MaxGuestResponseValues/2-64) + "{}]}}}}" }
	c, _ = answeringGuest(t, "application/json", within)
	runtime.GC()
	runtime.ReadMemStats(&before)
	ds, err := c.Apps.DaemonSets("kube-system").Get(context.Background(), "kube-vip", metav1.GetOptions{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("a DaemonSet of %d empty containers: %v", MaxGuestResponseValues/2-63, err)
	}
	allocated = after.TotalAlloc - before.TotalAlloc
	t.Logf("a DaemonSet of %d empty containers (%d KiB), the most values an answer may have: %d MiB allocated reading it", len(ds.Spec.Template.Spec.Containers), len(within())>>10, allocated>>20)
	if allocated > 32<<20 {
		t.Errorf("reading it allocated %d MiB", allocated>>20)
	}

	ordinary := func() string {
		return head + `{"name":"kube-vip","image":"ghcr.io/kube-vip/kube-vip:v1.0.0","args":["manager"],"env":[{"name":"vip_arp","value":"true"}]}]}}}}`
	}
	c, _ = answeringGuest(t, "application/json", ordinary)
	if ds, err := c.Apps.DaemonSets("kube-system").Get(context.Background(), "kube-vip", metav1.GetOptions{}); err != nil || len(ds.Spec.Template.Spec.Containers) != 1 {
		t.Errorf("an ordinary DaemonSet: %v, %v", ds, err)
	}

	c, _ = answeringGuest(t, "application/vnd.kubernetes.protobuf", func() string { return "k8s\x00\x0a\x0e\x0a\x07apps/v1\x12\x09DaemonSet" })
	if _, err := c.Apps.DaemonSets("kube-system").Get(context.Background(), "kube-vip", metav1.GetOptions{}); !errors.Is(err, ErrGuestResponseNotJSON) {
		t.Errorf("an answer in protobuf: %v; want ErrGuestResponseNotJSON", err)
	}
}
