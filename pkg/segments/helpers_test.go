package segments

import (
	"encoding/json"
	"net/netip"
	"testing"

	"sigs.k8s.io/yaml"
)

const testCluster = "c-m-harv1"

// fromYAML is an object written as upstream's testdata and README write it, as the API server
// would answer it: JSON.
func fromYAML(t testing.TB, y string) []byte {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return j
}

// nadJSON is a NAD as the API server answers it.
func nadJSON(t testing.TB, ns, name string, labels, annotations map[string]string, config string) []byte {
	t.Helper()
	o := map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1",
		"kind":       "NetworkAttachmentDefinition",
		"metadata":   map[string]any{"namespace": ns, "name": name, "labels": labels, "annotations": annotations, "resourceVersion": "4711"},
		"spec":       map[string]any{"config": config},
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// harvesterConfig is Harvester's NAD config template (harvester v1.8.2 pkg/builder/network.go), with
// the mtu the network controller's mutator adds.
func harvesterConfig(name, clusterNetwork string, vlan int) string {
	b, _ := json.Marshal(map[string]any{"cniVersion": "0.3.1", "name": name, "type": "bridge", "bridge": clusterNetwork + "-br",
		"promiscMode": true, "vlan": vlan, "ipam": map[string]any{}, "mtu": 1500})
	return string(b)
}

// vlanLabels are the labels the network controller writes on an access VLAN network.
func vlanLabels(clusterNetwork, vid string) map[string]string {
	return map[string]string{labelClusterNetwork: clusterNetwork, labelType: TypeVLAN, labelVLAN: vid, "network.harvesterhci.io/ready": "true"}
}

// listJSON is a page of a list holding items, with the continue token next.
func listJSON(kind, next string, items ...[]byte) []byte {
	raw := make([]json.RawMessage, len(items))
	for i, it := range items {
		raw[i] = it
	}
	b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": kind + "List",
		"metadata": map[string]any{"continue": next, "resourceVersion": "4711"}, "items": raw})
	if err != nil {
		panic(err)
	}
	return b
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// seg is a bridge segment of testCluster.
func seg(clusterNetwork string, vlan int) Segment {
	return Segment{Cluster: testCluster, ClusterNetwork: clusterNetwork, VLAN: vlan}
}

// segments resolves the NADs default/vlan10 (mgmt, VLAN 10) and prod/untagged (data, untagged).
func segments(ref string) (Segment, bool) {
	switch ref {
	case "default/vlan10":
		return seg("mgmt", 10), true
	case "prod/untagged":
		return seg("data", 0), true
	}
	return Segment{}, false
}

// run is a claim's run for comparisons: "first-last".
func run(c Claim) string {
	if c.First == c.Last {
		return c.First.String()
	}
	return c.First.String() + "-" + c.Last.String()
}
