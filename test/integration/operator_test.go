package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

// startOperator runs the operator binary against the test API server in namespace and stops it
// when the test ends. Its output is echoed when the test fails.
func startOperator(t *testing.T, namespace string, metricsPort int, extra ...string) *controlplane.Process {
	t.Helper()
	return startOperatorAs(t, shards.Of(t).Env.Kubeconfig, namespace, metricsPort, extra...)
}

// startOperatorAs is startOperator with the identity of kubeconfig.
func startOperatorAs(t *testing.T, kubeconfig, namespace string, metricsPort int, extra ...string) *controlplane.Process {
	t.Helper()
	return startOperatorWith(t, shards.Of(t).Operator, kubeconfig, nil, namespace, metricsPort, extra...)
}

// startOperatorWith is startOperatorAs with the operator build binary and env added to the
// process's environment.
func startOperatorWith(t *testing.T, binary, kubeconfig string, env []string, namespace string, metricsPort int, extra ...string) *controlplane.Process {
	t.Helper()
	args := append([]string{
		"--kubeconfig", kubeconfig,
		"--namespace", namespace,
		"--metrics-bind-address", "127.0.0.1",
		"--metrics-port", fmt.Sprint(metricsPort),
		// Allocations of FloatingIPs removed behind the operator's back are released in seconds.
		"--orphan-grace-period", "2s",
	}, extra...)
	p, err := controlplane.StartOperator(binary, nil, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(20 * time.Second); err != nil {
			t.Errorf("stopping the operator: %v", err)
		}
		if t.Failed() {
			fmt.Fprintf(os.Stderr, "---- operator output (%s, %s) ----\n%s\n", t.Name(), binary, p.Logs())
		}
	})
	return p
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestOperatorStartsLeadsAndReloadsConfig runs the operator binary: it acquires the leader Lease,
// syncs its caches, serves /metrics, /healthz and /readyz on the configured port, reloads a
// changed kube-fip-config without a restart, reports a bad value with an Event while keeping the
// old value, and stops cleanly.
func TestOperatorStartsLeadsAndReloadsConfig(t *testing.T) {
	shard := shards.Take(t)
	ctx := context.Background()
	const ns = "kube-fip-lifecycle"
	shard.CreateNamespace(t, ns)
	client := kubernetes.NewForConfigOrDie(shard.Env.Config)

	port := rig.FreePort(t)
	_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-fip-config", Namespace: ns},
		Data:       map[string]string{"logLevel": "Info", "operateGuestClusterInterval": "480", "metricsPort": fmt.Sprint(port)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// No --metrics-port: the port must come from the ConfigMap.
	p := startOperator(t, ns, 0)
	_ = p
	if err := p.WaitForLog(ctx, "acquired the leader Lease "+ns+"/kube-fip-operator", time.Minute); err != nil {
		t.Fatal(err)
	}
	lease, err := client.CoordinationV1().Leases(ns).Get(ctx, "kube-fip-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the leader Lease: %v", err)
	}
	host, _ := os.Hostname()
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != host {
		t.Errorf("Lease holder = %v, want %s", lease.Spec.HolderIdentity, host)
	}
	if err := p.WaitForLog(ctx, "caches synced", time.Minute); err != nil {
		t.Fatal(err)
	}

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	rig.Eventually(t, 10*time.Second, "/readyz to answer 200", func() bool {
		code, _ := httpGetQuiet(base + "/readyz")
		return code == http.StatusOK
	})
	if code, _ := httpGet(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d", code)
	}
	// The reload counter has a sample once the ConfigMap controller has handled kube-fip-config,
	// which may come just after the caches report synced.
	var code int
	var body string
	if !rig.Within(10*time.Second, func() bool {
		code, body = httpGet(t, base+"/metrics")
		return code == http.StatusOK && strings.Contains(body, `kubefipoperator_config_reloads_total{status="success"}`)
	}) {
		t.Fatalf("/metrics = %d without a successful config reload after 10s:\n%.500s", code, body)
	}

	// A valid change is picked up live: the log level applies at once (debug lines appear) and the
	// new interval is in force.
	updateConfig(t, ns, map[string]string{"logLevel": "Debug", "operateGuestClusterInterval": "30", "metricsPort": fmt.Sprint(port)})
	if err := p.WaitForLog(ctx, "level=debug", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitForLog(ctx, "operateGuestClusterInterval=30s", 30*time.Second); err != nil {
		t.Fatal(err)
	}

	// A bad value: a Warning Event on the ConfigMap names the key, and the old value stays.
	updateConfig(t, ns, map[string]string{"logLevel": "Debug", "operateGuestClusterInterval": "soon", "metricsPort": fmt.Sprint(port)})
	rig.Eventually(t, 30*time.Second, "a Warning Event on kube-fip-config naming operateGuestClusterInterval", func() bool {
		events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=kube-fip-config"})
		if err != nil {
			return false
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == "InvalidValue" && strings.Contains(e.Message, "operateGuestClusterInterval") {
				return true
			}
		}
		return false
	})
	if err := p.WaitForLog(ctx, `invalid value \"soon\"`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	inForce := lastLine(p.Logs(), "kube-fip-config in force:")
	if !strings.Contains(inForce, "operateGuestClusterInterval=30s") {
		t.Errorf("after the bad value the configuration in force is %q; want the interval to stay 30s", inForce)
	}

	// Still serving, still the same process.
	if code, _ := httpGet(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz after reloads = %d", code)
	}
	if err := p.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
}

func httpGetQuiet(url string) (int, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func updateConfig(t *testing.T, ns string, data map[string]string) {
	t.Helper()
	client := kubernetes.NewForConfigOrDie(shards.Of(t).Env.Config)
	cm, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), "kube-fip-config", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		t.Fatal("kube-fip-config is gone")
	}
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = data
	if _, err := client.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// lastLine returns the last log line containing substr.
func lastLine(logs, substr string) string {
	lines := strings.Split(logs, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], substr) {
			return lines[i]
		}
	}
	return ""
}
