package integration

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/pkg/testenv"
)

// secretRequests are the requests about Secrets among reqs.
func secretRequests(reqs []testenv.APIRequest) []testenv.APIRequest {
	var out []testenv.APIRequest
	for _, q := range reqs {
		if strings.HasPrefix(q.Path, "/api/v1/secrets") || strings.Contains(q.Path, "/secrets") && strings.HasPrefix(q.Path, "/api/v1/namespaces/") {
			out = append(out, q)
		}
	}
	return out
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

	rec, err := testenv.StartAPIProxy(shared.env.Config, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rec.Close() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := rec.WriteKubeconfig(kubeconfig, ""); err != nil {
		t.Fatal(err)
	}
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
	for _, q := range secretRequests(rec.Requests()) {
		metadataOnly := strings.Contains(q.Accept, "as=PartialObjectMetadata")
		name := q.Path[strings.LastIndex(q.Path, "/secrets")+len("/secrets"):]
		switch {
		case metadataOnly:
			metadataWatches++
		case q.Method == http.MethodGet && name == "/"+gc.name+"-kubeconfig":
			kubeconfigGets++
		default:
			t.Errorf("the operator read Secret data beyond the kubeconfig it needs: %s %s?%s (Accept %q)", q.Method, q.Path, q.Query, q.Accept)
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
