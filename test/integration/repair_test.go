package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// TestRepairReleasesLeaks: a FloatingIP removed behind the operator's back (its finalizer stripped
// while no operator ran) leaves an allocation nobody holds; the start-up repair releases it, and a
// waiting FloatingIP gets the address.
func TestRepairReleasesLeaks(t *testing.T) {
	f := newFixture(t, "c-m-leak")
	p, _ := f.operator()
	f.createRange("leak", "10.148.0.0/30") // 2 addresses
	f.createFIP("keep", "leak", "")
	f.createFIP("gone", "leak", "")
	f.waitFIP("keep", 30*time.Second, "allocated", suite.Allocated)
	leaked := f.waitFIP("gone", 30*time.Second, "allocated", suite.Allocated).Status.IPAddress
	if err := p.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	x := f.getFIP("gone")
	x.Finalizers = nil
	if _, err := f.api.FloatingIP().Update(x); err != nil {
		t.Fatal(err)
	}
	if err := f.api.FloatingIP().Delete(f.ns, "gone", nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.held("leak")[leaked]; !ok {
		t.Fatalf("the leak was not set up: %s is not recorded", leaked)
	}
	f.createFIP("waiting", "leak", "")

	p, _ = f.operator()
	if err := p.WaitForLog(context.Background(), "repair: released leak/"+leaked, 30*time.Second); err != nil {
		t.Error(err)
	}
	x = f.waitFIP("waiting", 30*time.Second, "the leaked address", suite.Allocated)
	if x.Status.IPAddress != leaked {
		t.Errorf("waiting got %s, want the released %s", x.Status.IPAddress, leaked)
	}
	f.checkRecord("leak", 2)
}

// TestTraceIPAMData: with traceIpamData on, the allocation table is logged at info level after
// each pass.
func TestTraceIPAMData(t *testing.T) {
	f := newFixture(t, "c-m-trace")
	client := kubernetes.NewForConfigOrDie(f.shard.Env.Config)
	_, err := client.CoreV1().ConfigMaps(f.ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-fip-config", Namespace: f.ns},
		Data:       map[string]string{"traceIpamData": "true", "operateGuestClusterInterval": "1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := f.operator()
	f.createRange("trace", "10.149.0.0/29")
	x := f.createFIP("traced", "trace", "10.149.0.3")
	f.waitFIP("traced", 30*time.Second, "allocated", suite.Allocated)
	line := fmt.Sprintf("10.149.0.3 %s/traced uid=%s", f.ns, x.UID)
	if err := p.WaitForLog(context.Background(), line, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Logs(), "level=info msg=\"allocation table:") {
		t.Error("the allocation table is not logged at info level")
	}
}
