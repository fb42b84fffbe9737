package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/controllers/discovery"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// quick is how soon a guest cluster must get its address once its last object exists: far below
// operateGuestClusterInterval (480 s by default) and any resync, so only the arrival of that object
// can have triggered it.
const quick = 5 * time.Second

// credentialPickup bounds how long discovery takes to read a cloud credential that arrived or was
// fixed after the cluster first looked for it: the next credential retry, which doubles from one
// second.
const credentialPickup = 20 * time.Second

// passesOver counts the discovery passes over provisioning cluster name that operator p logged.
func passesOver(p *controlplane.Process, name string) int {
	return strings.Count(p.Logs(), "discovery: cluster "+rancher.FleetNamespace+"/"+name+": ")
}

// waitDecision waits until operator p logged a discovery pass over provisioning cluster name that
// decided as said: a known later event, after which what that pass did not do is shown not to have
// happened.
func waitDecision(t *testing.T, p *controlplane.Process, name, decision string) {
	t.Helper()
	line := "discovery: cluster " + rancher.FleetNamespace + "/" + name + ": " + decision
	if err := p.WaitForLog(context.Background(), line, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// waitPassesOver waits until operator p logged more than n discovery passes over provisioning
// cluster name.
func waitPassesOver(t *testing.T, p *controlplane.Process, name string, n int) {
	t.Helper()
	rig.Eventually(t, 30*time.Second, fmt.Sprintf("another discovery pass over %s", name), func() bool {
		return passesOver(p, name) > n
	})
}

// discoveryReasons are the reasons of discovery's Events (other controllers record their own on
// provisioning clusters).
var discoveryReasons = map[string]bool{
	v1.ReasonFloatingIPCreated: true, v1.ReasonFloatingIPDeleted: true,
	v1.ReasonNoControlPlanePool: true, v1.ReasonNoMachineConfigRef: true, v1.ReasonNoCloudCredential: true,
	v1.ReasonInvalidCloudCredential: true, v1.ReasonInvalidHarvesterCluster: true, v1.ReasonInvalidNetwork: true,
	v1.ReasonNetworkWithoutNamespace: true, v1.ReasonNoMatchingRange: true, v1.ReasonRangeNetworkMismatch: true,
	v1.ReasonNoRangeForNetwork: true, v1.ReasonNoRangeForFamily: true,
}

// TestDiscoveryObjectsInAnyOrder: whichever object of a Harvester guest cluster arrives last —
// namespace, provisioning cluster, cloud credential, Harvester management cluster or HarvesterConfig
// — its arrival triggers the decision (a credential's, through the credential retry): the cluster
// gets exactly one FloatingIP, from the range of its network, within seconds. It is created with its address proposed in spec.ipaddress, and holds
// that address.
func TestDiscoveryObjectsInAnyOrder(t *testing.T) {
	f := newFixture(t, "kube-fip-disc-order")
	r := f.shard.Rancher(t)
	p, _ := f.debugOperator()
	f.createRangeFor("disc-order-vlan20", "10.160.1.0/24", "harv-order", "vlan20")
	f.createRangeFor("disc-order-vlan10", "10.160.0.0/24", "harv-order", "vlan10")

	orders := []struct {
		name  string
		steps []string
	}{
		{"namespace first, provisioning cluster last", []string{"namespace", "config", "management", "credential", "cluster"}},
		{"provisioning cluster first", []string{"cluster", "config", "management", "credential", "namespace"}},
		{"credential last", []string{"namespace", "management", "config", "cluster", "credential"}},
		{"management cluster last", []string{"cluster", "namespace", "credential", "config", "management"}},
		{"HarvesterConfig last", []string{"management", "credential", "cluster", "namespace", "config"}},
	}
	for i, o := range orders {
		// Each guest has a Harvester management cluster of its own, so that "management last" is.
		g := rancher.Guest{Name: fmt.Sprintf("order%d", i), ID: fmt.Sprintf("c-m-order%03d", i),
			Harvester: fmt.Sprintf("c-m-harvord%d", i), Display: "harv-order", Network: rancher.Network("vlan10")}
		parts := r.Steps(g)
		last := len(o.steps) - 1
		for _, step := range o.steps[:last] {
			rig.Must(t, parts[step]())
		}
		// The provisioning cluster is the unit of work: while it is missing there is nothing to
		// decide. Once it exists, the pass that finds only the last object missing is the known
		// later event.
		if missing := map[string]string{"namespace": "namespace " + g.ID, "credential": "cloud credential " + rancher.GlobalNamespace + "/" + g.CredentialName(),
			"management": "Harvester management cluster " + g.Harvester, "config": "HarvesterConfig " + rancher.FleetNamespace + "/" + g.ConfigName()}[o.steps[last]]; missing != "" {
			waitDecision(t, p, g.Name, "waits for "+missing)
		}
		if n := len(suite.FIPsIn(t, r.FIPs, g.ID)); n != 0 {
			t.Fatalf("%s: %d FloatingIPs before the last object (%s) exists", o.name, n, o.steps[last])
		}
		start := time.Now()
		rig.Must(t, parts[o.steps[last]]())
		// A credential is never watched (the operator may only GET Secrets): the cluster reads it
		// again on its retry timer, which is seconds apart this early.
		within := quick
		if o.steps[last] == "credential" {
			within = credentialPickup
		}
		x := suite.WaitFIP(t, r.FIPs, g.ID, g.Name+"-kubevip", within)
		t.Logf("%s: %s/%s holds %s %s after the %s appeared", o.name, x.Namespace, x.Name, x.Status.IPAddress,
			time.Since(start).Round(time.Millisecond), o.steps[last])

		want := map[string]string{v1.AnnotationClusterName: g.Name, v1.AnnotationFloatingIPRange: "disc-order-vlan10",
			v1.AnnotationUpdateConfigMap: "true", v1.AnnotationProvisioningCluster: rancher.FleetNamespace + "/" + g.Name}
		for k, v := range want {
			if x.Annotations[k] != v {
				t.Errorf("%s: annotation %s = %q, want %q", o.name, k, x.Annotations[k], v)
			}
		}
		if !strings.HasPrefix(x.Status.IPAddress, "10.160.0.") {
			t.Errorf("%s: address %s is not from disc-order-vlan10", o.name, x.Status.IPAddress)
		}
		// Created with its address: the spec was never written again (generation 1).
		if p := x.Annotations[v1.AnnotationProposedAddress]; p != x.Status.IPAddress || x.Spec.IPAddress != p || x.Generation != 1 {
			t.Errorf("%s: proposed %q, spec.ipaddress %q, status %q, generation %d; want the proposal held, generation 1",
				o.name, p, x.Spec.IPAddress, x.Status.IPAddress, x.Generation)
		}
	}
	// Each FloatingIP's creation brings its cluster back; that pass finds it and creates no other.
	for i := range orders {
		waitDecision(t, p, fmt.Sprintf("order%d", i), "has its FloatingIP")
	}
	for i := range orders {
		if n := len(suite.FIPsIn(t, r.FIPs, fmt.Sprintf("c-m-order%03d", i))); n != 1 {
			t.Errorf("%s: %d FloatingIPs, want exactly 1", orders[i].name, n)
		}
	}
	if lines := errorLinesAbout(p.Logs(), "order"); len(lines) > 0 {
		t.Errorf("error log lines:\n%s", strings.Join(lines, "\n"))
	}
}

// TestDiscoveryPicksTheRangeOfTheNetwork: of two ranges of one Harvester cluster, a guest gets the
// one of its network, whether the HarvesterConfig names it in networkName or in the networkInfo JSON
// (the first interface there); with a network no range names, none of them (a range of another
// network is no use to kube-vip), and a Warning Event says so.
func TestDiscoveryPicksTheRangeOfTheNetwork(t *testing.T) {
	f := newFixture(t, "kube-fip-disc-net")
	r := f.shard.Rancher(t)
	f.operator()
	f.createRangeFor("disc-net-vlan20", "10.161.1.0/24", "harv-net", "vlan20")
	f.createRangeFor("disc-net-vlan10", "10.161.0.0/24", "harv-net", "default/vlan10")
	f.createRangeFor("disc-net-elsewhere", "10.161.2.0/24", "harv-net-other", "vlan10")

	cases := []struct {
		name, wantRange, wantPrefix string
		network                     map[string]interface{}
	}{
		{"net-name", "disc-net-vlan20", "10.161.1.", rancher.Network("vlan20")},
		{"net-info", "disc-net-vlan10", "10.161.0.",
			map[string]interface{}{"networkInfo": `{"interfaces":[{"networkName":"default/vlan10","macAddress":""}]}`}},
		{"net-two", "disc-net-vlan20", "10.161.1.", map[string]interface{}{
			"networkName": "default/vlan10", // older field: networkInfo wins
			"networkInfo": `{"interfaces":[{"networkName":"default/vlan20","macAddress":""},{"networkName":"default/vlan10","macAddress":""}]}`}},
	}
	for i, c := range cases {
		rig.Must(t, r.AddGuest(rancher.Guest{Name: c.name, ID: fmt.Sprintf("c-m-net%05d", i), Harvester: "c-m-harvnet", Display: "harv-net", Network: c.network}))
	}
	none := rancher.Guest{Name: "net-none", ID: "c-m-netnone", Harvester: "c-m-harvnet", Display: "harv-net", Network: rancher.Network("vlan99")}
	rig.Must(t, r.AddGuest(none))
	for i, c := range cases {
		x := suite.WaitFIP(t, r.FIPs, fmt.Sprintf("c-m-net%05d", i), c.name+"-kubevip", quick)
		if x.Annotations[v1.AnnotationFloatingIPRange] != c.wantRange || !strings.HasPrefix(x.Status.IPAddress, c.wantPrefix) {
			t.Errorf("%s: %s from %s, want an address of %s", c.name, x.Status.IPAddress, x.Annotations[v1.AnnotationFloatingIPRange], c.wantRange)
		}
	}
	rig.Eventually(t, quick, "the Events", func() bool {
		return f.shard.HasEvent(t, rancher.FleetNamespace, "net-two", corev1.EventTypeNormal, v1.ReasonFloatingIPCreated, "networkInfo interface 1 of 2") &&
			f.shard.HasEvent(t, rancher.FleetNamespace, none.Name, corev1.EventTypeWarning, v1.ReasonNoRangeForNetwork,
				"harvesterClusterName=harv-net and harvesterNetworkName=default/vlan99")
	})
	if n := len(suite.FIPsIn(t, r.FIPs, none.ID)); n != 0 {
		t.Errorf("net-none, on a network no range names, got %d FloatingIPs; want none", n)
	}
	for _, name := range []string{"net-name", none.Name} {
		if f.shard.HasEvent(t, rancher.FleetNamespace, name, corev1.EventTypeWarning, v1.ReasonRangeNetworkMismatch, "") {
			t.Errorf("%s got a RangeNetworkMismatch Event: no range names no network", name)
		}
	}
}

// TestDiscoveryLeavesOtherClustersAlone: an imported cluster, a custom cluster without a
// credential, a cluster of another node driver and a cluster whose namespace is not a c-m-
// namespace get no FloatingIP, no Event and no error log line; a Harvester cluster without a
// credential gets a Warning Event only.
func TestDiscoveryLeavesOtherClustersAlone(t *testing.T) {
	f := newFixture(t, "kube-fip-disc-ignore")
	r := f.shard.Rancher(t)
	p, _ := f.debugOperator()
	f.createRangeFor("disc-ignore", "10.162.0.0/24", "harv-ignore", "vlan10")
	rig.Must(t, r.AddManagementCluster("c-m-harvign", "harv-ignore"))

	rig.Must(t, r.AddNamespace("c-m-ignimp"))
	rig.Must(t, r.AddProvisioningCluster(provisioningCluster("ign-imported", ""), "c-m-ignimp", ""))
	rig.Must(t, r.AddNamespace("c-m-igncus"))
	custom := &provv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "ign-custom", Namespace: rancher.FleetNamespace}}
	custom.Spec.RKEConfig = &provv1.RKEConfig{} // a custom cluster: nodes registered by hand, no pools
	rig.Must(t, r.AddProvisioningCluster(custom, "c-m-igncus", ""))
	rig.Must(t, r.AddNamespace("c-m-ignaws"))
	rig.Must(t, r.AddCredential("cc-ign-aws", map[string]string{"amazonec2credentialConfig-accessKey": "AKIA"}))
	aws := rancher.HarvesterPool("nc-ign-aws")
	aws.NodeConfig.Kind = "Amazonec2Config"
	rig.Must(t, r.AddProvisioningCluster(provisioningCluster("ign-aws", rancher.GlobalNamespace+":cc-ign-aws", aws), "c-m-ignaws", ""))
	rig.Must(t, r.AddNamespace("c-m-ignnocred"))
	rig.Must(t, r.AddMachineConfig("nc-ign-nocred", rancher.Network("vlan10")))
	rig.Must(t, r.AddProvisioningCluster(provisioningCluster("ign-nocred", "", rancher.HarvesterPool("nc-ign-nocred")), "c-m-ignnocred", ""))
	plain := rancher.Guest{Name: "ign-plain", ID: "ign-plain-ns", Harvester: "c-m-harvign", Display: "harv-ignore", Network: rancher.Network("vlan10")}
	rig.Must(t, r.AddGuest(plain))
	rig.Must(t, r.AddNamespace("c-m-ignorphan")) // a c-m- namespace no cluster claims

	control := rancher.Guest{Name: "ign-control", ID: "c-m-igncontrol", Harvester: "c-m-harvign", Display: "harv-ignore", Network: rancher.Network("vlan10")}
	rig.Must(t, r.AddGuest(control))
	suite.WaitFIP(t, r.FIPs, control.ID, "ign-control-kubevip", quick)
	rig.Eventually(t, quick, "a NoCloudCredential Event on ign-nocred", func() bool {
		return f.shard.HasEvent(t, rancher.FleetNamespace, "ign-nocred", corev1.EventTypeWarning, v1.ReasonNoCloudCredential, "cloudCredentialSecretName")
	})
	// Each was handled and passed over; the namespace no cluster claims is no cluster's to decide.
	for _, name := range []string{"ign-imported", "ign-custom", "ign-aws"} {
		waitDecision(t, p, name, "not provisioned on Harvester")
	}
	waitDecision(t, p, "ign-plain", "no guest cluster namespace")

	for _, ns := range []string{"c-m-ignimp", "c-m-igncus", "c-m-ignaws", "c-m-ignnocred", "ign-plain-ns", "c-m-ignorphan"} {
		if fips := suite.FIPsIn(t, r.FIPs, ns); len(fips) != 0 {
			t.Errorf("namespace %s got %d FloatingIPs", ns, len(fips))
		}
	}
	for _, name := range []string{"ign-imported", "ign-custom", "ign-aws", "ign-plain"} {
		for _, e := range f.shard.Events(t, rancher.FleetNamespace, name) {
			if discoveryReasons[e.Reason] {
				t.Errorf("cluster %s got an Event: %s %s", name, e.Reason, e.Message)
			}
		}
	}
	if lines := errorLinesAbout(p.Logs(), "ign-", "c-m-ign"); len(lines) > 0 {
		t.Errorf("error log lines:\n%s", strings.Join(lines, "\n"))
	}
}

// TestDiscoveryWaitsForAMatchingRange: a cluster whose Harvester cluster has no range gets one
// Warning Event and one count in the metric — not more when it is handled again — and its
// FloatingIP as soon as a matching range is created.
func TestDiscoveryWaitsForAMatchingRange(t *testing.T) {
	f := newFixture(t, "kube-fip-disc-norange")
	r := f.shard.Rancher(t)
	p, port := f.debugOperator()
	g := rancher.Guest{Name: "late-range", ID: "c-m-laterange", Harvester: "c-m-harvlate", Display: "harv-late", Network: rancher.Network("vlan10")}
	rig.Must(t, r.AddGuest(g))

	rig.Eventually(t, quick, "a NoMatchingRange Event", func() bool {
		return f.shard.HasEvent(t, rancher.FleetNamespace, g.Name, corev1.EventTypeWarning, v1.ReasonNoMatchingRange, "harvesterClusterName=harv-late")
	})
	metric := `kubefipoperator_discovery_no_matching_range_total{harvesterclustername="harv-late"} 1`
	if _, body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", port)); !strings.Contains(body, metric) {
		t.Errorf("/metrics lacks %s", metric)
	}

	// Handled again — an unrelated range appears (which wakes no cluster of another Harvester
	// cluster), its HarvesterConfig changes (which does) — it still has no range, and says so no
	// second time.
	waitDecision(t, p, g.Name, "waits for a FloatingIPRange of Harvester cluster harv-late")
	handled := passesOver(p, g.Name)
	f.createRangeFor("disc-norange-unrelated", "10.163.1.0/24", "harv-unrelated", "vlan10")
	u, err := r.Dyn.Resource(discovery.HarvesterConfigResource()).Namespace(rancher.FleetNamespace).Get(context.Background(), g.ConfigName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.Object["cpuCount"] = "4"
	if _, err := r.Dyn.Resource(discovery.HarvesterConfigResource()).Namespace(rancher.FleetNamespace).Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPassesOver(t, p, g.Name, handled)
	if n := countEvents(t, rancher.FleetNamespace, g.Name, v1.ReasonNoMatchingRange); n != 1 {
		t.Errorf("NoMatchingRange recorded %d times, want once", n)
	}
	if _, body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", port)); !strings.Contains(body, metric) {
		t.Errorf("/metrics lacks %s after the cluster was handled again", metric)
	}
	if n := len(suite.FIPsIn(t, r.FIPs, g.ID)); n != 0 {
		t.Fatalf("%d FloatingIPs without a matching range", n)
	}

	start := time.Now()
	f.createRangeFor("disc-norange", "10.163.0.0/24", "harv-late", "vlan10")
	x := suite.WaitFIP(t, r.FIPs, g.ID, g.Name+"-kubevip", quick)
	t.Logf("%s after the range appeared", time.Since(start).Round(time.Millisecond))
	if x.Annotations[v1.AnnotationFloatingIPRange] != "disc-norange" {
		t.Errorf("allocated from %s", x.Annotations[v1.AnnotationFloatingIPRange])
	}
}

// countEvents counts the occurrences of Events with reason on an object of ns.
func countEvents(t *testing.T, ns, name, reason string) int {
	n := 0
	for _, e := range shards.Of(t).Events(t, ns, name) {
		if e.Reason == reason {
			n += int(e.Count)
			if e.Count == 0 {
				n++
			}
		}
	}
	return n
}

// provisioningCluster is a provisioning cluster in fleet-default with the cloud credential
// credential and the machine pools given.
func provisioningCluster(name, credential string, pools ...provv1.RKEMachinePool) *provv1.Cluster {
	c := &provv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rancher.FleetNamespace}}
	c.Spec.CloudCredentialSecretName = credential
	if pools != nil {
		c.Spec.RKEConfig = &provv1.RKEConfig{MachinePools: pools}
	}
	return c
}
