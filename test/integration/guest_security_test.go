package integration

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	guestclient "github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
)

func kubevipDaemonSet(release string) *appsv1.DaemonSet {
	labels := map[string]string{"app": "kube-vip"}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-vip", Namespace: "kube-system", Annotations: map[string]string{"meta.helm.sh/release-name": release}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-vip", Image: "example.invalid/kube-vip"}}},
			},
		},
	}
}

// TestGuestProvisioningDaemonSetRotationAndLogs runs the operator at trace level against three
// guests: one still provisioning (the proxy answers 503), one with the Harvester cloud provider's
// kube-vip DaemonSet and one with somebody else's. The provisioning one is Provisioning, not down;
// with kubevipGuestInstall disabled both DaemonSets are left alone (the operator's kube-vip is not
// there to take over from Harvester's); a rotated kubeconfig is used at
// once and the old token is refused; and no token, kubeconfig or certificate appears in the logs,
// the Events or the conditions.
func TestGuestProvisioningDaemonSetRotationAndLogs(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "c-m-secure")
	proxy := f.shard.StartClusterProxy(t)
	harv := rancherCluster(t, proxy, "secure-harv", "c-m-secuharv", nil, f.shard.StartGuest(t, "secure-harv"))
	other := rancherCluster(t, proxy, "secure-other", "c-m-secuothr", nil, f.shard.StartGuest(t, "secure-other"))
	prov := rancherCluster(t, proxy, "secure-prov", "c-m-secuprov", nil, f.shard.StartGuest(t, "secure-prov"))
	proxy.SetMode(prov.id, guests.ProxyNotProvisioned)
	for _, gc := range []*guestCluster{harv, other, prov} {
		f.extraNamespace(gc.id)
	}
	if _, err := harv.direct.AppsV1().DaemonSets("kube-system").Create(ctx, kubevipDaemonSet("harvester-cloud-provider"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.direct.AppsV1().DaemonSets("kube-system").Create(ctx, kubevipDaemonSet("someone-else"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	f.operatorConfig(map[string]string{"logLevel": "Trace", "operateGuestClusterInterval": "1", "kubevipGuestInstall": "disabled"})
	p, port := f.operator()
	f.createRange("secure", "10.153.0.0/28")
	f.createFIPIn(harv.id, "secure-harv-kubevip", "secure", "10.153.0.2")
	f.createFIPIn(other.id, "secure-other-kubevip", "secure", "10.153.0.3")
	f.createFIPIn(prov.id, "secure-prov-kubevip", "secure", "10.153.0.4")

	// Provisioning: pending, not down.
	x := f.waitFIPIn(prov.id, "secure-prov-kubevip", 30*time.Second, "Provisioning", guestReason("Provisioning"))
	if x.Status.GuestState != "Provisioning" {
		t.Errorf("guest state = %q, want Provisioning", x.Status.GuestState)
	}
	_, body := httpGet(t, "http://127.0.0.1:"+itoa(port)+"/metrics")
	if !strings.Contains(body, `kubefipoperator_guestcluster_status{guestclustername="secure-prov",harvesterclustername="harvester-c-m-secure"} 2`) {
		t.Errorf("a provisioning cluster is not reported as provisioning (2):\n%s", grepLines(body, "secure-prov"))
	}

	// The DaemonSets, after more passes.
	harv.waitCIDR(t, "10.153.0.2/32", 30*time.Second)
	other.waitCIDR(t, "10.153.0.3/32", 30*time.Second)
	waitGuestPasses(t, port, harv, other)
	ds, err := harv.direct.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-vip", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Spec.Template.Spec.NodeSelector) != 0 || ds.Generation != 1 {
		t.Errorf("Harvester's DaemonSet: node selector %v, generation %d; want it left alone in a guest without the operator's kube-vip", ds.Spec.Template.Spec.NodeSelector, ds.Generation)
	}
	ds, _ = other.direct.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-vip", metav1.GetOptions{})
	if len(ds.Spec.Template.Spec.NodeSelector) != 0 || ds.Generation != 1 {
		t.Errorf("somebody else's DaemonSet was changed: %v, generation %d", ds.Spec.Template.Spec.NodeSelector, ds.Generation)
	}
	if f.shard.HasEvent(t, harv.id, "secure-harv-kubevip", corev1.EventTypeNormal, "HarvesterKubevipDisabled", "") {
		t.Error("a HarvesterKubevipDisabled Event in a guest without the operator's kube-vip")
	}

	// Rotation: the new token is used at once, the old one is refused by the proxy.
	oldToken := harv.token
	harv.rotate(t, proxy)
	rejectedBefore := proxy.Rejected(harv.id)
	f.editFIPIn(harv.id, "secure-harv-kubevip", func(x *v1.FloatingIP) { x.Spec.IPAddress = "10.153.0.9" })
	harv.waitCIDR(t, "10.153.0.9/32", 15*time.Second)
	f.waitFIPIn(harv.id, "secure-harv-kubevip", 15*time.Second, "Configured with the new token", guestReason("Configured"))
	t.Logf("operator requests refused for the old token after the rotation: %d", proxy.Rejected(harv.id)-rejectedBefore)
	oldKubeconfig, err := proxy.Kubeconfig(harv.id, oldToken)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := guestclient.NewClient(nil, guestclient.Target{Name: "stale", ClusterID: harv.id, Kubeconfig: oldKubeconfig, Rancher: []string{proxy.URL}}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if state, err := stale.Check(ctx); state == guestclient.Connected || !apierrors.IsUnauthorized(err) {
		t.Errorf("the old token still works through the proxy: %v, %v", state, err)
	}

	// Nothing secret in the logs, trace level included.
	kube := kubernetes.NewForConfigOrDie(f.shard.Env.Config)
	secret, err := kube.CoreV1().Secrets(rancher.FleetNamespace).Get(ctx, "secure-harv-kubeconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	logs := p.Logs()
	if !strings.Contains(logs, "level=trace") && !strings.Contains(logs, "level=debug") {
		t.Error("the operator logged nothing below info: the log check would prove nothing")
	}
	// Nor in the Events and conditions people read.
	texts := guestTexts(t, harv.id, other.id, prov.id)
	for what, needle := range map[string]string{"the old token": oldToken, "the new token": harv.token, "the other cluster token": other.token,
		"the provisioning cluster token": prov.token, "a certificate": "BEGIN CERTIFICATE", "a bearer header": "Bearer "} {
		if strings.Contains(texts, needle) {
			t.Errorf("an Event or condition contains %s", what)
		}
	}
	for what, needle := range map[string]string{
		"the old token":            oldToken,
		"the new token":            harv.token,
		"the other cluster token":  other.token,
		"kubeconfig content":       "certificate-authority-data",
		"a certificate":            "BEGIN CERTIFICATE",
		"the kubeconfig, base64ed": base64.StdEncoding.EncodeToString(secret.Data["value"])[:40],
		"a bearer header":          "Bearer ",
	} {
		if strings.Contains(logs, needle) {
			t.Errorf("the logs contain %s", what)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func grepLines(body, substr string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
