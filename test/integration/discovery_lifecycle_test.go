package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// TestDiscoveryMalformedInputs: each malformed value gets a Warning Event naming the reason —
// recorded once, not again when the cluster is handled again — and no panic; the operator keeps
// running, never logs the credential's data, and a fixed credential is picked up at the next retry.
func TestDiscoveryMalformedInputs(t *testing.T) {
	f := newFixture(t, "kube-fip-disc-bad")
	r := f.shard.Rancher(t)
	p, _ := f.debugOperator()
	f.createRangeFor("disc-bad", "10.164.0.0/24", "harv-bad", "vlan10")
	rig.Must(t, r.AddManagementCluster("c-m-harvbad", "harv-bad"))

	good := rancher.HarvesterCredential("c-m-harvbad")
	noKey := map[string]string{"harvestercredentialConfig-kubeconfigContent": good["harvestercredentialConfig-kubeconfigContent"]}
	workers := rancher.HarvesterPool("nc-bad-nocp")
	workers.ControlPlaneRole, workers.EtcdRole = false, false
	// The provisioning CRD's schema requires machineConfigRef, so a pool without one never gets
	// past the API server; an empty one does.
	noRef := rancher.HarvesterPool("")
	noRef.NodeConfig = nil
	if _, err := r.Prov.Create(&provv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "bad-rejected", Namespace: rancher.FleetNamespace},
		Spec: provv1.ClusterSpec{RKEConfig: &provv1.RKEConfig{MachinePools: []provv1.RKEMachinePool{noRef}}}}); !apierrors.IsInvalid(err) {
		t.Fatalf("a pool without machineConfigRef: %v, want Invalid", err)
	}
	noRef.NodeConfig = &corev1.ObjectReference{Kind: harvester.MachineConfigKind}
	cases := []struct {
		name, reason, contains string
		credential             map[string]string
		credentialRef          string
		network                map[string]interface{}
		pool                   provv1.RKEMachinePool
	}{
		{name: "bad-nokey", reason: v1.ReasonInvalidCloudCredential, contains: "has no " + harvester.ClusterIDKey, credential: noKey},
		{name: "bad-ref", reason: v1.ReasonInvalidCloudCredential, contains: "names a namespace other than", credentialRef: "a:b:c"},
		{name: "bad-slashes", reason: v1.ReasonInvalidNetwork, contains: "is not namespace/name", network: rancher.Network("vlan10/x")},
		{name: "bad-notjson", reason: v1.ReasonInvalidNetwork, contains: "networkInfo is not the JSON",
			network: map[string]interface{}{"networkInfo": "default/vlan10"}},
		{name: "bad-noifaces", reason: v1.ReasonInvalidNetwork, contains: "lists no interfaces",
			network: map[string]interface{}{"networkInfo": `{"interfaces":[]}`}},
		{name: "bad-noref", reason: v1.ReasonNoMachineConfigRef, contains: "has no machineConfigRef", pool: noRef},
		{name: "bad-nocp", reason: v1.ReasonNoControlPlanePool, contains: "controlPlaneRole", pool: workers},
		// Not fatal: the bare name is used, and the Event says so.
		{name: "bad-bare", reason: v1.ReasonNetworkWithoutNamespace, contains: "has no namespace", network: map[string]interface{}{"networkName": "vlan10"}},
	}
	for i, c := range cases {
		id := fmt.Sprintf("c-m-bad%05d", i)
		rig.Must(t, r.AddNamespace(id))
		if c.credential == nil {
			c.credential = good
		}
		rig.Must(t, r.AddCredential("cc-"+c.name, c.credential))
		if c.network == nil {
			c.network = rancher.Network("vlan10")
		}
		rig.Must(t, r.AddMachineConfig("nc-"+c.name, c.network))
		if c.pool.Name == "" {
			c.pool = rancher.HarvesterPool("nc-" + c.name)
		}
		if c.credentialRef == "" {
			c.credentialRef = rancher.GlobalNamespace + ":cc-" + c.name
		}
		// Rancher makes a management cluster for every provisioning cluster; its namespace is
		// the one whose FloatingIPs get addresses.
		rig.Must(t, r.AddManagementCluster(id, c.name))
		rig.Must(t, r.AddProvisioningCluster(provisioningCluster(c.name, c.credentialRef, c.pool), id, ""))
	}
	for _, c := range cases {
		rig.Eventually(t, quick, fmt.Sprintf("a %s Event on %s", c.reason, c.name), func() bool {
			return f.shard.HasEvent(t, rancher.FleetNamespace, c.name, corev1.EventTypeWarning, c.reason, c.contains)
		})
	}
	suite.WaitFIP(t, r.FIPs, "c-m-bad00007", "bad-bare-kubevip", quick)

	// Handled again (Rancher updates its clusters all the time): no Event repeats.
	handled := map[string]int{}
	for _, c := range cases {
		rig.Eventually(t, 30*time.Second, "a discovery pass over "+c.name, func() bool { return passesOver(p, c.name) > 0 })
		handled[c.name] = passesOver(p, c.name)
	}
	for _, c := range cases {
		x, err := r.Prov.Get(rancher.FleetNamespace, c.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		x.Labels = map[string]string{"touched": "yes"}
		if _, err := r.Prov.Update(x); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		waitPassesOver(t, p, c.name, handled[c.name])
	}
	for i, c := range cases {
		if n := countEvents(t, rancher.FleetNamespace, c.name, c.reason); n != 1 {
			t.Errorf("%s: %s recorded %d times, want once", c.name, c.reason, n)
		}
		if c.name != "bad-bare" && len(suite.FIPsIn(t, r.FIPs, fmt.Sprintf("c-m-bad%05d", i))) != 0 {
			t.Errorf("%s got a FloatingIP", c.name)
		}
	}

	select {
	case <-p.Done():
		t.Fatal("the operator exited")
	default:
	}
	logs := p.Logs()
	for _, forbidden := range []string{"panic", "do-not-log-me"} {
		if strings.Contains(logs, forbidden) {
			t.Errorf("the operator's log contains %q", forbidden)
		}
	}

	// The person fixes the credential: the next credential retry brings the cluster its
	// FloatingIP.
	s, err := r.Kube.CoreV1().Secrets(rancher.GlobalNamespace).Get(context.Background(), "cc-bad-nokey", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data[harvester.ClusterIDKey] = []byte("c-m-harvbad")
	if _, err := r.Kube.CoreV1().Secrets(rancher.GlobalNamespace).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixed := time.Now()
	suite.WaitFIP(t, r.FIPs, "c-m-bad00000", "bad-nokey-kubevip", 2*credentialPickup)
	t.Logf("the fixed credential was read %s after the fix", time.Since(fixed).Round(time.Millisecond))
}

// TestDiscoveryRestartNeverCreatesASecondFloatingIP: across a restart, a cluster keeps its one
// FloatingIP (same object, same address), a cluster with a FloatingIP made by hand never gets
// another, and the FloatingIP of a cluster deleted while the operator was down is deleted and its
// address released once it is back.
func TestDiscoveryRestartNeverCreatesASecondFloatingIP(t *testing.T) {
	f := newFixture(t, "kube-fip-disc-restart")
	r := f.shard.Rancher(t)
	p, _ := f.operator()
	f.createRangeFor("disc-restart", "10.165.0.0/24", "harv-restart", "vlan10")
	g := func(name, id string) rancher.Guest {
		return rancher.Guest{Name: name, ID: id, Harvester: "c-m-harvrs", Display: "harv-restart", Network: rancher.Network("vlan10")}
	}

	auto, gone := g("rs-auto", "c-m-rsauto"), g("rs-gone", "c-m-rsgone")
	rig.Must(t, r.AddGuest(auto))
	rig.Must(t, r.AddGuest(gone))
	hand := g("rs-hand", "c-m-rshand")
	rig.Must(t, r.AddNamespace(hand.ID))
	byHand := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{Name: "my-vip", Namespace: hand.ID, Annotations: map[string]string{
		v1.AnnotationClusterName: hand.Name, v1.AnnotationFloatingIPRange: "disc-restart", v1.AnnotationUpdateConfigMap: "false"}}}
	if _, err := r.FIPs.FloatingIP().Create(byHand); err != nil {
		t.Fatal(err)
	}
	rig.Must(t, r.AddGuest(hand))
	before := suite.WaitFIP(t, r.FIPs, auto.ID, "rs-auto-kubevip", quick)
	goneFIP := suite.WaitFIP(t, r.FIPs, gone.ID, "rs-gone-kubevip", quick)
	suite.WaitFIP(t, r.FIPs, hand.ID, "my-vip", quick)

	if err := p.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	rig.Must(t, r.DeleteCluster(gone.Name))
	p, _ = f.debugOperator()
	fresh := g("rs-fresh", "c-m-rsfresh")
	rig.Must(t, r.AddGuest(fresh))
	suite.WaitFIP(t, r.FIPs, fresh.ID, "rs-fresh-kubevip", quick)

	rig.Eventually(t, quick, "the FloatingIP of the cluster deleted meanwhile to be deleted", func() bool {
		_, err := r.FIPs.FloatingIP().Get(gone.ID, "rs-gone-kubevip", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	for addr, a := range f.held("disc-restart") {
		if a.UID == goneFIP.UID {
			t.Errorf("%s is still held by the deleted %s/%s", addr, a.Namespace, a.Name)
		}
	}
	// Deleted while the operator was down, the cluster still gets its address retained.
	if kept, ok := suite.RetainedIn(t, f.api, "disc-restart")[goneFIP.Status.IPAddress]; !ok || kept.Spec.Retained.Cluster.Name != gone.Name {
		t.Errorf("%s of the cluster deleted meanwhile is not retained for it: %+v", goneFIP.Status.IPAddress, kept.Spec)
	}
	// The restarted operator handled both clusters, found their FloatingIPs and created no other.
	waitDecision(t, p, auto.Name, "has its FloatingIP")
	waitDecision(t, p, hand.Name, "has its FloatingIP")
	after := suite.FIPsIn(t, r.FIPs, auto.ID)
	if len(after) != 1 || after[0].UID != before.UID || after[0].Status.IPAddress != before.Status.IPAddress {
		t.Errorf("rs-auto has %d FloatingIPs after the restart; want only %s with %s", len(after), before.Name, before.Status.IPAddress)
	}
	if fips := suite.FIPsIn(t, r.FIPs, hand.ID); len(fips) != 1 || fips[0].Name != "my-vip" {
		t.Errorf("rs-hand has %d FloatingIPs; want only my-vip", len(fips))
	}
}

// TestDiscoveryClusterRemovalReleasesTheAddress: deleting a provisioning cluster deletes its
// FloatingIP and releases the address, whether the cluster goes at once or waits for another
// controller's finalizer (as Rancher's do); discovery never puts a finalizer on the cluster or the
// namespace. A FloatingIP deleted by hand while its cluster lives is made again.
//
// envtest runs no namespace controller, so a deleted namespace stays Terminating there forever
// (nothing empties it). The test therefore checks what discovery is responsible for: the
// FloatingIP is gone and its address released once the cluster is deleted, and nothing in the
// namespace — the namespace included — carries a finalizer of the operator's.
func TestDiscoveryClusterRemovalReleasesTheAddress(t *testing.T) {
	f := newFixture(t, "kube-fip-disc-remove")
	r := f.shard.Rancher(t)
	// Without retention, the address is released with the FloatingIP.
	f.operatorConfig(map[string]string{"addressRetention": "0"})
	f.operator()
	f.createRangeFor("disc-remove", "10.166.0.0/29", "harv-remove", "vlan10")
	one := rancher.Guest{Name: "rm-one", ID: "c-m-rmone", Harvester: "c-m-harvrm", Display: "harv-remove", Network: rancher.Network("vlan10")}
	two := rancher.Guest{Name: "rm-two", ID: "c-m-rmtwo", Harvester: "c-m-harvrm", Display: "harv-remove", Network: rancher.Network("vlan10")}
	rig.Must(t, r.AddGuest(one))
	first := suite.WaitFIP(t, r.FIPs, one.ID, "rm-one-kubevip", quick)

	// Deleted by hand while the cluster lives: made again.
	if err := r.FIPs.FloatingIP().Delete(one.ID, first.Name, nil); err != nil {
		t.Fatal(err)
	}
	rig.Eventually(t, quick, "a new FloatingIP for rm-one", func() bool {
		x, err := r.FIPs.FloatingIP().Get(one.ID, first.Name, metav1.GetOptions{})
		return err == nil && x.UID != first.UID && suite.Allocated(x)
	})
	one1 := suite.WaitFIP(t, r.FIPs, one.ID, "rm-one-kubevip", quick)

	// A cluster that another controller's finalizer keeps (as Rancher's keep theirs): its
	// FloatingIP goes as soon as the deletion starts.
	parts := r.Steps(two)
	for _, step := range []string{"management", "credential", "config", "namespace"} {
		rig.Must(t, parts[step]())
	}
	rig.Must(t, r.AddManagementCluster(two.ID, two.Name))
	c := &provv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: two.Name, Namespace: rancher.FleetNamespace, Finalizers: []string{"test.cattle.io/rancher"}}}
	c.Spec.CloudCredentialSecretName = rancher.GlobalNamespace + ":" + two.CredentialName()
	c.Spec.RKEConfig = &provv1.RKEConfig{MachinePools: []provv1.RKEMachinePool{rancher.HarvesterPool(two.ConfigName())}}
	rig.Must(t, r.AddProvisioningCluster(c, two.ID, ""))
	fip2 := suite.WaitFIP(t, r.FIPs, two.ID, "rm-two-kubevip", quick)

	for _, name := range []string{one.Name, two.Name} {
		x, err := r.Prov.Get(rancher.FleetNamespace, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(x.Finalizers) > 1 || (len(x.Finalizers) == 1 && x.Finalizers[0] != "test.cattle.io/rancher") {
			t.Errorf("provisioning cluster %s carries finalizers %v", name, x.Finalizers)
		}
	}

	rig.Must(t, r.DeleteCluster(two.Name))
	waitGone(t, r, two.ID, fip2)
	if x, err := r.Prov.Get(rancher.FleetNamespace, two.Name, metav1.GetOptions{}); err != nil || x.DeletionTimestamp == nil {
		t.Fatalf("rm-two should still be held by its finalizer: %v", err)
	}
	rig.Eventually(t, quick, "a FloatingIPDeleted Event on rm-two", func() bool {
		return f.shard.HasEvent(t, rancher.FleetNamespace, two.Name, corev1.EventTypeNormal, v1.ReasonFloatingIPDeleted, fip2.Status.IPAddress)
	})

	rig.Must(t, r.DeleteCluster(one.Name))
	waitGone(t, r, one.ID, one1)

	for _, ns := range []string{one.ID, two.ID} {
		if err := r.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		n, err := r.Kube.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(n.Finalizers) > 0 || len(n.Spec.Finalizers) != 1 || n.Spec.Finalizers[0] != corev1.FinalizerKubernetes {
			t.Errorf("namespace %s carries finalizers %v / %v beyond Kubernetes' own", ns, n.Finalizers, n.Spec.Finalizers)
		}
		if fips := suite.FIPsIn(t, r.FIPs, ns); len(fips) != 0 {
			t.Errorf("namespace %s still holds FloatingIP %s (finalizers %v)", ns, fips[0].Name, fips[0].Finalizers)
		}
	}
	if held := f.held("disc-remove"); len(held) != 0 {
		t.Errorf("range disc-remove still holds %v", held)
	}
}

// waitGone waits until the FloatingIP is gone and its range no longer records its address.
func waitGone(t testing.TB, r *rancher.World, namespace string, x *v1.FloatingIP) {
	t.Helper()
	start := time.Now()
	var err error
	var held bool
	if !rig.Within(quick, func() bool {
		_, err = r.FIPs.FloatingIP().Get(namespace, x.Name, metav1.GetOptions{})
		_, held = suite.HeldIn(t, r.FIPs, x.Status.Range)[x.Status.IPAddress]
		return apierrors.IsNotFound(err) && !held
	}) {
		t.Fatalf("FloatingIP %s/%s: not gone and released within %s (get: %v, held: %v)", namespace, x.Name, quick, err, held)
	}
	t.Logf("FloatingIP %s/%s gone and %s released %s after the deletion", namespace, x.Name, x.Status.IPAddress, time.Since(start).Round(time.Millisecond))
}
