package discovery

import (
	"strings"
	"testing"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

// networkRange is a range of Harvester cluster harv1 naming network (none when empty).
func networkRange(name, network string) *v1.FloatingIPRange {
	r := &v1.FloatingIPRange{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{v1.AnnotationHarvesterClusterName: "harv1"}},
		Spec: v1.FloatingIPRangeSpec{IPRange: "10.0.0.0/24"}}
	if network != "" {
		r.Annotations[v1.AnnotationHarvesterNetworkName] = network
	}
	return r
}

// networkHandler is a discovery handler whose fleet namespace holds the HarvesterConfig nc-demo
// on network, and the FloatingIPs and ranges given.
func networkHandler(t *testing.T, network string, fips []*v1.FloatingIP, ranges ...*v1.FloatingIPRange) (*handler, *fakes.FloatingIPs, *record.FakeRecorder) {
	t.Helper()
	configs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	config := &unstructured.Unstructured{Object: map[string]interface{}{"networkName": network}}
	config.SetAPIVersion("rke-machine-config.cattle.io/v1")
	config.SetKind(harvester.MachineConfigKind)
	config.SetNamespace("fleet-default")
	config.SetName("nc-demo")
	if err := configs.Add(config); err != nil {
		t.Fatal(err)
	}
	api := fakes.NewFloatingIPs(fips...)
	events := record.NewFakeRecorder(10)
	h := &handler{fleetNamespace: "fleet-default", fips: api, ranges: fakes.NewRanges(ranges...), prov: fakes.NewProvisioningClusters(),
		recorder: events, machineConfigs: cache.NewGenericLister(configs, HarvesterConfigResource().GroupResource())}
	h.addIndexers()
	return h, api, events
}

// demoCluster is the provisioning cluster fleet-default/demo, its control-plane pool on nc-demo.
func demoCluster() *provv1.Cluster {
	c := &provv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "fleet-default"}}
	c.Spec.CloudCredentialSecretName = "cattle-global-data:cc-demo"
	c.Spec.RKEConfig = &provv1.RKEConfig{MachinePools: []provv1.RKEMachinePool{{Name: "pool1", ControlPlaneRole: true,
		NodeConfig: &corev1.ObjectReference{Kind: harvester.MachineConfigKind, Name: "nc-demo"}}}}
	c.Status.ClusterName = "c-m-demo"
	return c
}

// held is f holding addr in range rng, as the FloatingIP controller shows it.
func held(f *v1.FloatingIP, rng, addr string) *v1.FloatingIP {
	f.Status.Range, f.Status.IPAddress = rng, addr
	v1.SetCondition(&f.Status, v1.Allocated, true, v1.ReasonAllocated, "holds "+addr)
	return f
}

// TestCheckNetworks: a FloatingIP whose address is of a range that surely names another network
// than the cluster's control-plane pool is shown so — Warning=True, AddressOnAnotherNetwork, and a
// Warning Event — and is neither moved nor changed otherwise; one of the network, of a range that
// names none, or of one the bare network may be, is not; a shown Warning goes once it no longer
// holds.
func TestCheckNetworks(t *testing.T) {
	ranges := []*v1.FloatingIPRange{networkRange("vlan10", "vlan10"), networkRange("vlan20", "default/vlan20"),
		networkRange("unnamed", ""), networkRange("other-ns", "other/vlan10")}
	flagged := held(fip("demo-kubevip", "demo", "vlan20", "10.0.0.5", ""), "vlan20", "10.0.0.5")
	v1.SetCondition(&flagged.Status, v1.Warning, true, v1.ReasonAddressOnAnotherNetwork, "was of another network")
	for _, tc := range []struct {
		name, network string
		fip           *v1.FloatingIP
		warning       string // the message's start; "" for no Warning
		event         bool
	}{
		{name: "held on another network", network: "default/vlan10", fip: held(fip("demo-kubevip", "demo", "vlan20", "10.0.0.5", ""), "vlan20", "10.0.0.5"),
			warning: "it holds 10.0.0.5 of FloatingIPRange vlan20, annotated harvesterNetworkName=default/vlan20, but the guest cluster's control-plane pool is on network default/vlan10",
			event:   true},
		{name: "made by hand, waiting in a range of another network", network: "default/vlan10", fip: fip("by-hand", "demo", "vlan20", "", ""),
			warning: "it waits for an address of FloatingIPRange vlan20", event: true},
		{name: "held on its network", network: "default/vlan10", fip: held(fip("demo-kubevip", "demo", "vlan10", "10.0.0.5", ""), "vlan10", "10.0.0.5")},
		{name: "held in a range that names no network", network: "default/vlan10", fip: held(fip("demo-kubevip", "demo", "unnamed", "10.0.0.5", ""), "unnamed", "10.0.0.5")},
		{name: "held in a range the bare network may be", network: "vlan10", fip: held(fip("demo-kubevip", "demo", "other-ns", "10.0.0.5", ""), "other-ns", "10.0.0.5")},
		{name: "its range is gone", network: "default/vlan10", fip: held(fip("demo-kubevip", "demo", "gone", "10.0.0.5", ""), "gone", "10.0.0.5")},
		{name: "another cluster's", network: "default/vlan10", fip: held(fip("other-kubevip", "other", "vlan20", "10.0.0.5", ""), "vlan20", "10.0.0.5")},
		{name: "the network changed to the range's: the Warning goes", network: "vlan20", fip: flagged.DeepCopy()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, api, events := networkHandler(t, tc.network, []*v1.FloatingIP{tc.fip}, ranges...)
			if err := h.checkNetworks(demoCluster(), "c-m-demo"); err != nil {
				t.Fatal(err)
			}
			if len(api.Updated) != 0 {
				t.Errorf("%d updates of the FloatingIP itself; want none: nothing moves", len(api.Updated))
			}
			was, _ := v1.GetCondition(tc.fip.Status.Conditions, v1.Warning)
			switch {
			case tc.warning == "" && was.Type == "":
				if len(api.Written) != 0 {
					t.Fatalf("%d status writes; want none", len(api.Written))
				}
			case len(api.Written) != 1:
				t.Fatalf("%d status writes; want 1", len(api.Written))
			default:
				w := api.Written[0]
				c, ok := v1.GetCondition(w.Status.Conditions, v1.Warning)
				if tc.warning == "" && ok {
					t.Errorf("Warning %s %q stays", c.Reason, c.Message)
				}
				if tc.warning != "" && (!ok || c.Status != corev1.ConditionTrue || c.Reason != v1.ReasonAddressOnAnotherNetwork || !strings.HasPrefix(c.Message, tc.warning)) {
					t.Errorf("Warning = %s %s %q; want True %s %q…", c.Status, c.Reason, c.Message, v1.ReasonAddressOnAnotherNetwork, tc.warning)
				}
				if w.Status.IPAddress != tc.fip.Status.IPAddress || w.Status.Range != tc.fip.Status.Range || v1.Allocated.IsTrue(w) != v1.Allocated.IsTrue(tc.fip) {
					t.Errorf("the allocation shown changed: %s in %s", w.Status.IPAddress, w.Status.Range)
				}
			}
			select {
			case e := <-events.Events:
				if !tc.event || !strings.HasPrefix(e, "Warning "+v1.ReasonAddressOnAnotherNetwork+" ") {
					t.Errorf("Event %q", e)
				}
			default:
				if tc.event {
					t.Error("no Event")
				}
			}
			if tc.warning == "" || len(api.Written) == 0 {
				return
			}
			// Shown once: the next pass, over the FloatingIP as written, finds nothing new.
			again := fakes.NewFloatingIPs(api.Written[0])
			h.fips = again
			h.addIndexers()
			if err := h.checkNetworks(demoCluster(), "c-m-demo"); err != nil {
				t.Fatal(err)
			}
			if n := len(again.Written); n != 0 || len(events.Events) != 0 {
				t.Errorf("the second pass wrote %d times and sent %d Events; want nothing", n, len(events.Events))
			}
		})
	}
}
