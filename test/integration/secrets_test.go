package integration

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

// secretRequests are the requests about Secrets among reqs.
func secretRequests(reqs []controlplane.APIRequest) []controlplane.APIRequest {
	var out []controlplane.APIRequest
	for _, q := range reqs {
		if strings.HasPrefix(q.Path, "/api/v1/secrets") || strings.Contains(q.Path, "/secrets") && strings.HasPrefix(q.Path, "/api/v1/namespaces/") {
			out = append(out, q)
		}
	}
	return out
}

// TestSecretsAreReadOnlyByName runs the operator through a recording proxy while it configures a
// guest and follows a kubeconfig rotation. It never lists or watches Secrets (the chart grants
// get only), and the only Secret it reads is the guest's kubeconfig, with a GET by name at each
// pass: the pass after a rotation uses the new token.
func TestSecretsAreReadOnlyByName(t *testing.T) {
	f := newFixture(t, "c-m-secmeta")
	proxy := f.shard.StartClusterProxy(t)
	gc := rancherCluster(t, proxy, "secmeta", "c-m-secmeta1", nil, f.shard.StartGuest(t, "secmeta"))
	f.extraNamespace(gc.id)
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "600", "kubevipGuestInstall": "disabled"})

	rec, kubeconfig := adminAPIProxy(t)
	port := rig.FreePort(t)
	// The last --kubeconfig wins: the operator talks only through the recording proxy.
	p := startOperator(t, f.ns, port, append(controlplane.LoopbackChartSourceArgs(), "--kubeconfig", kubeconfig)...)
	if err := p.WaitForLog(t.Context(), "controllers running", time.Minute); err != nil {
		t.Fatal(err)
	}
	f.createRange("secmeta", "10.154.0.0/28")
	f.createFIPIn(gc.id, "secmeta-kubevip", "secmeta", "10.154.0.2")
	gc.waitCIDR(t, "10.154.0.2/32", 30*time.Second)

	// After a rotation the old token is refused. The interval is ten minutes, so only the pass
	// the provisioning cluster's change starts can bring the deleted ConfigMap back, and it can
	// only do so with the kubeconfig it reads afresh.
	if err := gc.direct.CoreV1().ConfigMaps("kube-system").Delete(t.Context(), "kubevip", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gc.rotate(t, proxy)
	rig.Must(t, gc.world.LabelCluster(gc.name, "kubefip.k8s.binbash.org/test-rotated", "true"))
	gc.waitCIDR(t, "10.154.0.2/32", 30*time.Second)

	var kubeconfigGets int
	for _, q := range secretRequests(rec.Requests()) {
		name := q.Path[strings.LastIndex(q.Path, "/secrets")+len("/secrets"):]
		switch {
		case q.Method == http.MethodGet && name == "/"+gc.name+"-kubeconfig" && !strings.Contains(q.Query, "watch"):
			kubeconfigGets++
		default:
			t.Errorf("the operator asked for Secrets beyond the kubeconfig it needs: %s %s?%s (Accept %q)", q.Method, q.Path, q.Query, q.Accept)
		}
	}
	if kubeconfigGets < 2 {
		t.Errorf("the kubeconfig Secret was read %d times; want a GET for the first pass and one after the rotation", kubeconfigGets)
	}
	t.Logf("Secret requests: %d GETs of the kubeconfig, no list or watch", kubeconfigGets)
}

// adminAPIProxy starts an APIProxy acting as administrator in front of the test API server, closed
// when the test ends, and returns it with the path of a kubeconfig for it.
func adminAPIProxy(t *testing.T) (*controlplane.APIProxy, string) {
	t.Helper()
	api, err := controlplane.StartAPIProxy(shards.Of(t).Env.Config, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := api.WriteKubeconfig(kubeconfig, ""); err != nil {
		t.Fatal(err)
	}
	return api, kubeconfig
}
