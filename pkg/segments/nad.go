package segments

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The labels and the annotation network-controller-harvester v1.8.2 keeps on a NAD
// (pkg/utils/labels.go).
const (
	labelClusterNetwork = "network.harvesterhci.io/clusternetwork"
	labelVLAN           = "network.harvesterhci.io/vlan-id"
	labelType           = "network.harvesterhci.io/type"
	annotationRoute     = "network.harvesterhci.io/route"
)

// The network controller's limits (pkg/utils/bridge.go, vlan.go): a bridge is "<cluster
// network>-br", at most 15 bytes (a Linux device name), and an access VLAN is 0 to 4094.
const (
	bridgeSuffix  = "-br"
	maxDeviceName = 15
	maxVLAN       = 4094
	mgmtNetwork   = "mgmt"
)

// The CNI types the network controller knows (pkg/utils/nad.go); an empty type is a bridge.
const (
	cniBridge  = "bridge"
	cniKubeOVN = "kube-ovn"
)

var (
	errBadName          = errors.New("the object's namespace or name is not a Kubernetes name")
	errNoConfig         = errors.New("spec.config is empty")
	errNoClusterNetwork = errors.New("no cluster network")
)

// nadObject is what is read of a NetworkAttachmentDefinition (k8s.cni.cncf.io/v1).
type nadObject struct {
	Metadata struct {
		Namespace   string            `json:"namespace"`
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Config string `json:"config"`
	} `json:"spec"`
}

// netConf is what is read of a NAD's spec.config: the part of the network controller's NetConf
// that decides the segment.
type netConf struct {
	Type      string      `json:"type"`
	Bridge    string      `json:"bridge"`
	VLAN      int         `json:"vlan"`
	VLANTrunk []*struct{} `json:"vlanTrunk"`
}

// layer3 is what is read of the route annotation (the network controller's Layer3NetworkConf).
type layer3 struct {
	CIDR     string `json:"cidr"`
	Gateway  string `json:"gateway"`
	Outdated bool   `json:"outdated"`
}

// parseNAD reads one NAD of the Harvester cluster cluster. The segment comes from spec.config,
// which is what the CNI bridge plugin acts on and what the network controller derives its labels
// from (NetConf.SetNetworkInfoToLabels); the labels are read only when there is no config. A NAD
// that gives no cluster network, or whose config does not decode, is no network a VM can be on.
func parseNAD(cluster string, item []byte) (Network, error) {
	var o nadObject
	if err := json.Unmarshal(item, &o); err != nil {
		return Network{}, err
	}
	if o.Metadata.Namespace == "" || !validNames(o.Metadata.Namespace, o.Metadata.Name) {
		return Network{}, errBadName
	}
	n := Network{Namespace: o.Metadata.Namespace, Name: o.Metadata.Name}
	seg, typ, err := segmentFromConfig(o.Spec.Config)
	if errors.Is(err, errNoConfig) {
		seg, typ, err = segmentFromLabels(o.Metadata.Labels)
	}
	if err != nil {
		return Network{}, err
	}
	if len(validation.IsDNS1123Label(seg.ClusterNetwork)) > 0 {
		return Network{}, errNoClusterNetwork
	}
	seg.Cluster = cluster
	if typ == TypeOverlay || typ == TypeTrunk {
		seg.Isolated = n.String()
	}
	n.Segment, n.Type = seg, typ
	n.CIDR, n.Gateway = route(o.Metadata.Annotations[annotationRoute])
	return n, nil
}

// segmentFromConfig derives the segment as NetConf.SetNetworkInfoToLabels does: kube-ovn is on
// mgmt; a bridge's cluster network is its name less "-br"; a non-zero vlan is an access VLAN, a
// vlanTrunk with vlan 0 a trunk, and neither untagged.
func segmentFromConfig(config string) (Segment, string, error) {
	if strings.TrimSpace(config) == "" {
		return Segment{}, "", errNoConfig
	}
	var c netConf
	if err := json.Unmarshal([]byte(config), &c); err != nil {
		return Segment{}, "", fmt.Errorf("spec.config is not the network controller's JSON: %w", err)
	}
	switch c.Type {
	case cniKubeOVN:
		return Segment{ClusterNetwork: mgmtNetwork}, TypeOverlay, nil
	case cniBridge, "":
	default:
		return Segment{}, "", fmt.Errorf("%w: the CNI type is neither bridge nor kube-ovn", errNoClusterNetwork)
	}
	if len(c.Bridge) <= len(bridgeSuffix) || len(c.Bridge) > maxDeviceName || !strings.HasSuffix(c.Bridge, bridgeSuffix) {
		return Segment{}, "", fmt.Errorf("%w: the bridge is not <cluster network>-br", errNoClusterNetwork)
	}
	seg := Segment{ClusterNetwork: strings.TrimSuffix(c.Bridge, bridgeSuffix)}
	switch {
	case c.VLAN < 0 || c.VLAN > maxVLAN:
		return Segment{}, "", fmt.Errorf("the VLAN %d is not 0 to %d", c.VLAN, maxVLAN)
	case c.VLAN != 0:
		seg.VLAN = c.VLAN
		return seg, TypeVLAN, nil
	case len(c.VLANTrunk) > 0:
		return seg, TypeTrunk, nil
	}
	return seg, TypeUntagged, nil
}

// segmentFromLabels reads the labels the network controller wrote, for a NAD without config.
func segmentFromLabels(labels map[string]string) (Segment, string, error) {
	seg := Segment{ClusterNetwork: labels[labelClusterNetwork]}
	if seg.ClusterNetwork == "" {
		return Segment{}, "", errNoClusterNetwork
	}
	vid, hasVID := labels[labelVLAN]
	if hasVID {
		v, err := strconv.Atoi(vid)
		if err != nil || v < 0 || v > maxVLAN {
			return Segment{}, "", fmt.Errorf("the label %s is not a VLAN id", labelVLAN)
		}
		seg.VLAN = v
	}
	typ := labels[labelType]
	switch {
	case typ == TypeOverlay || typ == TypeTrunk || typ == TypeUntagged:
		// The network controller deletes vlan-id from every network but an access VLAN.
		seg.VLAN = 0
	case typ == TypeVLAN || (typ == "" && seg.VLAN != 0):
		if seg.VLAN == 0 {
			return Segment{}, "", fmt.Errorf("an L2VlanNetwork without the label %s", labelVLAN)
		}
		typ = TypeVLAN
	case typ == "":
		typ = TypeUntagged
	default:
		return Segment{}, "", fmt.Errorf("the label %s is no network type Harvester knows", labelType)
	}
	return seg, typ, nil
}

// route reads the route annotation's cidr and gateway; what is invalid, or outdated, is zero.
func route(annotation string) (netip.Prefix, netip.Addr) {
	if annotation == "" {
		return netip.Prefix{}, netip.Addr{}
	}
	var l layer3
	if json.Unmarshal([]byte(annotation), &l) != nil || l.Outdated {
		return netip.Prefix{}, netip.Addr{}
	}
	cidr, err := netip.ParsePrefix(l.CIDR)
	if err != nil || cidr.Bits() == 0 || cidr.Addr().Is4In6() {
		cidr = netip.Prefix{}
	} else {
		cidr = cidr.Masked()
	}
	gw, ok := parseAddr(l.Gateway)
	if !ok || (cidr.IsValid() && gw.Is4() != cidr.Addr().Is4()) {
		gw = netip.Addr{}
	}
	return cidr, gw
}
