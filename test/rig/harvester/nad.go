package harvester

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The NAD labels and annotation of network-controller-harvester v1.8.2 pkg/utils/labels.go.
const (
	LabelClusterNetwork = "network.harvesterhci.io/clusternetwork"
	LabelNetworkType    = "network.harvesterhci.io/type"
	LabelVlanID         = "network.harvesterhci.io/vlan-id"
	LabelNetworkReady   = "network.harvesterhci.io/ready"
	AnnotationRoute     = "network.harvesterhci.io/route"
)

// The network types of pkg/utils/nad.go the writers use.
const (
	NetworkTypeVlan     = "L2VlanNetwork"
	NetworkTypeUntagged = "UntaggedNetwork"
)

// ManagementNetwork is the cluster network every Harvester node has (pkg/utils/mgmt.go): its
// bridge is mgmt-br.
const ManagementNetwork = "mgmt"

const (
	// vlanConfigTemplate is harvester v1.8.2 pkg/builder/network.go NetworkVLANConfigTemplate:
	// the network's name, its cluster network, its VLAN id.
	vlanConfigTemplate = `{"cniVersion":"0.3.1","name":"%s","type":"bridge","bridge":"%s-br","promiscMode":true,"vlan":%d,"ipam":{}}`
	// connectivityReachable is the route's connectivity once the controller's ping of the gateway
	// answered (utils.Connectable).
	connectivityReachable = "true"
)

// Route is the layer 3 information of a VLAN network, the network.harvesterhci.io/route
// annotation: utils.Layer3NetworkConf of pkg/utils/nad.go, whose JSON keys and order these
// fields keep.
type Route struct {
	// Mode is "manual" (a person gave CIDR and Gateway) or "auto" (a helper job learnt them with
	// DHCP, from the server at ServerIPAddr).
	Mode         string `json:"mode,omitempty"`
	CIDR         string `json:"cidr,omitempty"`
	Gateway      string `json:"gateway,omitempty"`
	ServerIPAddr string `json:"serverIPAddr,omitempty"`
	// Connectivity is what the controller's ping of the gateway found: "true", "false", "ping
	// failed", or "DHCP failed" when the helper job got no lease.
	Connectivity string `json:"connectivity,omitempty"`
	Outdated     bool   `json:"outdated,omitempty"`
}

// ManualRoute is the route of a network a person gave cidr and gateway, as the NAD controller
// leaves it once its ping of the gateway answered.
func ManualRoute(cidr, gateway string) *Route {
	return &Route{Mode: "manual", CIDR: cidr, Gateway: gateway, Connectivity: connectivityReachable}
}

// AutoRoute is the route of a network whose CIDR and gateway the helper job learnt from the DHCP
// server at server, as the NAD controller leaves it once its ping of the gateway answered.
func AutoRoute(cidr, gateway, server string) *Route {
	return &Route{Mode: "auto", CIDR: cidr, Gateway: gateway, ServerIPAddr: server, Connectivity: connectivityReachable}
}

// NAD creates the VM network namespace/name on cluster network clusterNetwork ("mgmt" or one of
// the cluster's own) with VLAN id vlan, 0 for an untagged network, and a manual route of cidr and
// gateway unless cidr is empty: see NADWithRoute.
func (c *Cluster) NAD(ctx context.Context, namespace, name, clusterNetwork string, vlan int, cidr, gateway string) (*unstructured.Unstructured, error) {
	var route *Route
	if cidr != "" {
		route = ManualRoute(cidr, gateway)
	}
	return c.NADWithRoute(ctx, namespace, name, clusterNetwork, vlan, route)
}

// NADWithRoute creates a VM network as Harvester v1.8.2 leaves one made in its UI: spec.config
// from pkg/builder/network.go's NetworkVLANConfigTemplate (the webhook patches "mtu" in only when
// the cluster network's MTU is not the default 1500, which it is here), the labels
// network-controller-harvester's webhook and controller set (SetNetworkInfoToLabels; the cluster
// network is taken to be Ready), and route, when not nil, as the route annotation.
func (c *Cluster) NADWithRoute(ctx context.Context, namespace, name, clusterNetwork string, vlan int, route *Route) (*unstructured.Unstructured, error) {
	if vlan < 0 || vlan > 4094 {
		return nil, fmt.Errorf("NAD %s/%s: VLAN id %d is not in 0-4094", namespace, name, vlan)
	}
	if err := c.ensureNamespace(ctx, namespace); err != nil {
		return nil, err
	}
	nad := newObject(NADResource, "NetworkAttachmentDefinition", namespace, name)
	nad.SetLabels(NADLabels(clusterNetwork, vlan))
	if route != nil {
		raw, err := json.Marshal(route)
		if err != nil {
			return nil, err
		}
		nad.SetAnnotations(map[string]string{AnnotationRoute: string(raw)})
	}
	if err := unstructured.SetNestedField(nad.Object, NADConfig(name, clusterNetwork, vlan), "spec", "config"); err != nil {
		return nil, err
	}
	out, err := c.resource(NADResource, namespace).Create(ctx, nad, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating NAD %s/%s: %w", namespace, name, err)
	}
	return out, nil
}

// NADConfig is the CNI configuration of a VLAN network as Harvester writes it.
func NADConfig(name, clusterNetwork string, vlan int) string {
	return fmt.Sprintf(vlanConfigTemplate, name, clusterNetwork, vlan)
}

// NADLabels are the labels of a network on clusterNetwork with VLAN id vlan: an access VLAN has
// its id, an untagged network (vlan 0) none.
func NADLabels(clusterNetwork string, vlan int) map[string]string {
	labels := map[string]string{LabelClusterNetwork: clusterNetwork, LabelNetworkReady: "true", LabelNetworkType: NetworkTypeUntagged}
	if vlan != 0 {
		labels[LabelNetworkType] = NetworkTypeVlan
		labels[LabelVlanID] = strconv.Itoa(vlan)
	}
	return labels
}

// SetRoute replaces the route annotation of network namespace/name, or removes it when route is
// nil, as the helper job and the controller's pings do.
func (c *Cluster) SetRoute(ctx context.Context, namespace, name string, route *Route) error {
	_, err := c.change(ctx, NADResource, namespace, name, false, func(nad *unstructured.Unstructured) error {
		annotations := nad.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		delete(annotations, AnnotationRoute)
		if route != nil {
			raw, err := json.Marshal(route)
			if err != nil {
				return err
			}
			annotations[AnnotationRoute] = string(raw)
		}
		nad.SetAnnotations(annotations)
		return nil
	})
	if err != nil {
		return fmt.Errorf("setting the route of NAD %s/%s: %w", namespace, name, err)
	}
	return nil
}

// DeleteNAD deletes network namespace/name; one already gone is no error.
func (c *Cluster) DeleteNAD(ctx context.Context, namespace, name string) error {
	return c.remove(ctx, NADResource, namespace, name)
}
