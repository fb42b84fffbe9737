package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/big"
	"net/netip"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/kubefip/kube-fip-operator/pkg/admission"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/operator"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// TestAdmissionRanges: the real API server calls the webhook over TLS, trusting the CA the
// operator wrote into the chart's configuration. An overlapping range of the same address space is
// refused naming the other range; the same addresses in another space are accepted; a shrink, an
// exclude and a delete that take away a held address are refused naming the holder; a grow is
// accepted; the override annotation lets the shrink through, and the controller then reports the
// held address as orphaned and keeps it.
func TestAdmissionRanges(t *testing.T) {
	f := newFixture(t, "kube-fip-adm-ranges")
	w := f.newWebhookEnv(nil)
	w.start(true)

	f.selectionRange("adm-a", "10.181.0.0/28", "harv-adm", f.allowHere)
	_, err := f.api.FloatingIPRange().Create(rangeObject("adm-b", "10.181.0.8/29", "harv-adm"))
	if !suite.RefusedBecause(err, "overlaps FloatingIPRange adm-a (10.181.0.0/28)", "change one of them") {
		t.Errorf("an overlapping range of the same space: %v; want refused naming adm-a", err)
	}
	t.Logf("refused: %v", err)
	f.selectionRange("adm-other-space", "10.181.0.0/28", "harv-adm-2", nil) // the same addresses, another space

	rig.Must(t, ignoreExists(f.api.FloatingIP().Create(f.fip("adm-held", "adm-a", ""))))
	held := f.waitFIP("adm-held", 30*time.Second, "an address", suite.Allocated).Status.IPAddress
	addr := netip.MustParseAddr(held)
	holder := fmt.Sprintf("%s held by FloatingIP %s/adm-held", held, f.ns)

	for what, edit := range map[string]func(*v1.FloatingIPRange){
		"a shrink":   func(r *v1.FloatingIPRange) { r.Spec.IPRange = "10.181.0.8/29" },
		"an exclude": func(r *v1.FloatingIPRange) { r.Spec.Exclude = []string{addr.String() + "/32"} },
	} {
		r := f.getRange("adm-a")
		edit(r)
		_, err := f.api.FloatingIPRange().Update(r)
		if !suite.RefusedBecause(err, "takes away addresses FloatingIPs hold", holder, admission.AnnotationAllowOrphans) {
			t.Errorf("%s dropping %s: %v; want refused naming the holder and the override", what, held, err)
		}
		t.Logf("refused: %v", err)
	}
	err = f.api.FloatingIPRange().Delete("adm-a", nil)
	if !suite.RefusedBecause(err, "cannot be deleted while FloatingIPs hold its addresses", holder) {
		t.Errorf("deleting a range with a held address: %v; want refused naming the holder", err)
	}
	t.Logf("refused: %v", err)

	f.editRange("adm-a", func(r *v1.FloatingIPRange) { r.Spec.IPRange = "10.181.0.0/27" }) // a grow

	f.editRange("adm-a", func(r *v1.FloatingIPRange) {
		r.Annotations[admission.AnnotationAllowOrphans] = "true"
		r.Spec.IPRange = "10.181.0.16/28"
	})
	f.waitRange("adm-a", 30*time.Second, "OrphanedAllocations naming the held address", func(r *v1.FloatingIPRange) bool {
		return rangeReason(v1.ReasonOrphanedAllocations)(r) && strings.Contains(message(r.Status.Conditions, v1.Ready), held)
	})
	if x := f.getFIP("adm-held"); x.Status.IPAddress != held {
		t.Errorf("the forced shrink took %s from its FloatingIP: %s", held, suite.StatusText(x))
	}
}

// TestAdmissionFloatingIPs: a static address another FloatingIP holds, one retained for another
// cluster, and one in no range of the FloatingIP's address space are refused with the reason and
// the fix; a free one is accepted and allocated.
func TestAdmissionFloatingIPs(t *testing.T) {
	f := newFixture(t, "kube-fip-adm-fips")
	w := f.newWebhookEnv(nil)
	w.start(true)
	f.selectionRange("admf-a", "10.182.0.0/28", "harv-admf", f.allowHere)
	space := v1.SpaceOf(f.getRange("admf-a"))

	rig.Must(t, ignoreExists(f.api.FloatingIP().Create(f.fip("admf-held", "admf-a", ""))))
	held := f.waitFIP("admf-held", 30*time.Second, "an address", suite.Allocated).Status.IPAddress

	retained := netip.MustParseAddr("10.182.0.14")
	a := &v1.FloatingIPAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: v1.AllocationName(space, retained), Labels: map[string]string{
			v1.LabelRange: v1.RangeLabelValue("admf-a"), v1.LabelSpace: space.Hash(),
		}},
		Spec: v1.FloatingIPAllocationSpec{Address: retained.String(), Range: "admf-a", Space: space,
			Owner:    v1.FloatingIPReference{Namespace: "c-m-gone", Name: "gone-kubevip", UID: "0000-gone"},
			Retained: &v1.Retention{Cluster: v1.ClusterReference{Namespace: "fleet-default", Name: "gone"}, Until: metav1.NewTime(time.Now().Add(time.Hour))}},
	}
	rig.Must(t, ignoreExists(f.api.FloatingIPAllocation().Create(a)))
	// Kept while a running guest's Service serves it, as the FloatingIP that gave it up left it.
	kept := netip.MustParseAddr("10.182.0.13")
	k := a.DeepCopy()
	k.Name, k.Spec.Address = v1.AllocationName(space, kept), kept.String()
	k.Spec.Owner = v1.FloatingIPReference{Namespace: f.ns, Name: "admf-moved", UID: "0000-moved"}
	k.Spec.Retained = &v1.Retention{Cluster: v1.ClusterReference{Namespace: "fleet-default", Name: "running"}, Until: metav1.NewTime(time.Now().Add(time.Hour)),
		WhileServed: true, ServedBy: "default/ingress"}
	rig.Must(t, ignoreExists(f.api.FloatingIPAllocation().Create(k)))

	for _, tc := range []struct {
		ip   string
		want []string
	}{
		{held, []string{held + " is held by FloatingIP " + f.ns + "/admf-held", "choose a free address of FloatingIPRange admf-a"}},
		{retained.String(), []string{retained.String() + " is retained for cluster fleet-default/gone", "leave spec.ipaddress empty"}},
		{kept.String(), []string{kept.String() + " is kept for cluster fleet-default/running while its Services default/ingress serve it", "FloatingIPAllocation " + k.Name}},
		{"10.99.0.1", []string{"10.99.0.1 is in no FloatingIPRange of FloatingIP " + f.ns + "/admf-static's address space", "admf-a is 10.182.0.0/28"}},
	} {
		_, err := f.api.FloatingIP().Create(f.fip("admf-static", "admf-a", tc.ip))
		if !suite.RefusedBecause(err, tc.want...) {
			t.Errorf("static %s: %v; want refused with %q", tc.ip, err, tc.want)
		}
		t.Logf("refused: %v", err)
	}

	rig.Must(t, ignoreExists(f.api.FloatingIP().Create(f.fip("admf-static", "admf-a", "10.182.0.9"))))
	f.waitFIP("admf-static", 30*time.Second, "the free static address", func(x *v1.FloatingIP) bool {
		return suite.Allocated(x) && x.Status.IPAddress == "10.182.0.9"
	})
	// An edit that leaves spec.ipaddress alone is not judged again. The controllers' status writes
	// move the resourceVersion too, so the edit is made again on a conflict, as a person's would be.
	rig.Must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		x := f.getFIP("admf-static")
		x.Labels = map[string]string{"team": "a"}
		_, err := f.api.FloatingIP().Update(x)
		return err
	}))
}

// TestAdmissionConfig: kube-fip-config is judged by the checks the operator runs on it: an invalid
// value and a chart source the install policy refuses are refused when applied, naming the key; a
// valid configuration is accepted; a ConfigMap of another name is never sent to the webhook.
func TestAdmissionConfig(t *testing.T) {
	f := newFixture(t, "kube-fip-adm-config")
	w := f.newWebhookEnv(nil)
	w.start(true)
	cms := f.shard.Kube.CoreV1().ConfigMaps(f.ns)
	write := func(name string, data map[string]string) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Data: data}
		_, err := cms.Create(context.Background(), cm, metav1.CreateOptions{})
		if err != nil && strings.Contains(err.Error(), "already exists") {
			_, err = cms.Update(context.Background(), cm, metav1.UpdateOptions{})
		}
		return err
	}
	for key, value := range map[string]string{
		"operateGuestClusterInterval": "soon",
		"kubevipChartRepoUrl":         "https://charts.example.com/kube-vip",
	} {
		err := write("kube-fip-config", map[string]string{key: value})
		if !suite.RefusedBecause(err, fmt.Sprintf("kube-fip-config key %q", key), "nothing was changed") {
			t.Errorf("%s=%s: %v; want refused naming the key", key, value, err)
		}
		t.Logf("refused: %v", err)
	}
	rig.Must(t, write("kube-fip-config", map[string]string{"logLevel": "Debug", "operateGuestClusterInterval": "120"}))
	rig.Must(t, write("not-kube-fip-config", map[string]string{"operateGuestClusterInterval": "soon"}))
}

// TestAdmissionWebhookDown: with the webhook gone and the configuration still in place, the
// operator's own writes go on (the chart's matchConditions exempt its ServiceAccount, even from a
// rule that fails closed), a person's range write is refused by the API server (ranges fail
// closed), a person's FloatingIP is let through (FloatingIPs fail open), and the controller still
// gives no address to two FloatingIPs.
func TestAdmissionWebhookDown(t *testing.T) {
	f := newFixture(t, "kube-fip-adm-down")
	w := f.newWebhookEnv(nil)
	serving := w.start(true)
	f.selectionRange("down-a", "10.183.0.0/28", "harv-down", f.allowHere)
	rig.Must(t, ignoreExists(f.api.FloatingIP().Create(f.fip("down-held", "down-a", ""))))
	held := f.waitFIP("down-held", 30*time.Second, "an address", suite.Allocated).Status.IPAddress

	rig.Must(t, serving.Stop(20*time.Second))
	w.start(false) // the controllers, without the webhook

	_, err := f.api.FloatingIPRange().Create(rangeObject("down-b", "10.183.1.0/28", "harv-down"))
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Errorf("a range created while the webhook is down: %v; want refused by the API server", err)
	}
	t.Logf("what an administrator sees: %v", err)

	rig.Must(t, ignoreExists(f.api.FloatingIP().Create(f.fip("down-dup", "down-a", held))))
	f.waitFIP("down-dup", 30*time.Second, "IPConflict", reasonIs(v1.ReasonIPConflict))
	if n := len(suite.HeldIn(t, f.api, "down-a")); n != 1 {
		t.Errorf("down-a has %d holders, want only down-held", n)
	}

	// Every rule fails closed now: the operator's own writes still go through.
	vwcs := f.shard.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	vwc, err := vwcs.Get(context.Background(), w.name, metav1.GetOptions{})
	rig.Must(t, err)
	fail := admissionregistrationv1.Fail
	for i := range vwc.Webhooks {
		vwc.Webhooks[i].FailurePolicy = &fail
	}
	_, err = vwcs.Update(context.Background(), vwc, metav1.UpdateOptions{})
	rig.Must(t, err)
	rig.Eventually(t, 10*time.Second, "a person's FloatingIP refused while the webhook is down", func() bool {
		_, err := f.api.FloatingIP().Create(f.fip("down-refused", "down-a", ""))
		return err != nil && strings.Contains(err.Error(), "failed calling webhook")
	})
	r := f.shard.Rancher(t)
	g := harvesterGuest("admdown", "harv-down", nil)
	rig.Must(t, r.AddGuest(g))
	x := suite.WaitFIP(t, r.FIPs, g.ID, g.Name+"-kubevip", time.Minute)
	if x.Status.Range != "down-a" || x.Status.IPAddress == held {
		t.Errorf("the guest's FloatingIP, created and allocated by the operator: %s", suite.StatusText(x))
	}
}

// TestAdmissionStandbyServes: a replica that does not hold the leader Lease (another replica
// holds it, renewed a moment ago) serves the webhook all the same, so admission does not wait for
// a leader.
func TestAdmissionStandbyServes(t *testing.T) {
	f := newFixture(t, "kube-fip-adm-standby")
	w := f.newWebhookEnv(nil)
	now := metav1.NewMicroTime(time.Now())
	holder, seconds := "kube-fip-operator-5d9c7b-other", int32(3600)
	_, err := f.shard.Kube.CoordinationV1().Leases(f.ns).Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: operator.LeaseName, Namespace: f.ns},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	rig.Must(t, err)
	standby := w.launch(true)
	w.waitServing()
	f.selectionRange("sb-a", "10.185.0.0/28", "harv-sb", nil)
	err = f.shard.DryRunCreateRange(rangeObject("sb-b", "10.185.0.8/29", "harv-sb"))
	if !suite.RefusedBecause(err, "overlaps FloatingIPRange sb-a") {
		t.Errorf("an overlapping range, with only a standby serving: %v; want refused", err)
	}
	rig.Must(t, standby.WaitForLog(context.Background(), "waiting to acquire the leader Lease", 30*time.Second))
	if logs := standby.Logs(); strings.Contains(logs, "acquired the leader Lease") {
		t.Errorf("the serving replica took the Lease: %s", rig.LastLines(logs, 20))
	}
}

// TestAdmissionCertificateRotation: with a serving certificate of a few seconds' life, every
// replica renews it again and again; admission goes on answering throughout (no call fails), and
// the CA the API server trusts stays the same.
func TestAdmissionCertificateRotation(t *testing.T) {
	f := newFixture(t, "kube-fip-adm-rotation")
	w := f.newWebhookEnv(nil)
	w.start(true, "--webhook-cert-lifetime", "6s")
	f.selectionRange("rot-a", "10.184.0.0/28", "harv-rot", nil)
	vwcs := f.shard.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	caBundle := func() string {
		vwc, err := vwcs.Get(context.Background(), w.name, metav1.GetOptions{})
		rig.Must(t, err)
		return string(vwc.Webhooks[0].ClientConfig.CABundle)
	}
	bundle := caBundle()

	serials := map[string]bool{}
	calls := 0
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if s := servingSerial(t, w.port); s != nil {
			serials[s.String()] = true
		}
		calls += 2
		if err := w.judged(); err != nil {
			t.Fatalf("after %d calls and %d certificates: an accepted write failed: %v", calls, len(serials), err)
		}
		err := f.shard.DryRunCreateRange(rangeObject("rot-b", "10.184.0.8/29", "harv-rot"))
		if !suite.RefusedBecause(err, "overlaps FloatingIPRange rot-a") {
			t.Fatalf("after %d calls and %d certificates: an overlapping range: %v", calls, len(serials), err)
		}
	}
	t.Logf("%d admission calls answered across %d serving certificates", calls, len(serials))
	if len(serials) < 3 {
		t.Errorf("%d serving certificates in 20s of a 6s life; want the certificate renewed at least twice", len(serials))
	}
	if caBundle() != bundle {
		t.Errorf("the CA bundle changed during the serving certificate's renewals")
	}
}

// servingSerial is the serial number of the certificate the webhook serves now, or nil.
func servingSerial(t *testing.T, port int) *big.Int {
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads the serial number only
	if err != nil {
		t.Logf("dialing the webhook: %v", err)
		return nil
	}
	defer conn.Close()
	certs := conn.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil
	}
	return certs[0].SerialNumber
}
