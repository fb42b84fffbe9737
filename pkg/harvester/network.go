package harvester

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// Network is a Harvester VM network (a NetworkAttachmentDefinition). Namespace is empty when the
// HarvesterConfig gave a bare name.
type Network struct {
	Namespace string
	Name      string
}

func (n Network) String() string {
	return cache.ObjectName{Namespace: n.Namespace, Name: n.Name}.String()
}

// Matches reports whether a range's harvesterNetworkName annotation names this network: the
// original operator's ranges name it bare ("vlan10"), a careful person may write "default/vlan10".
func (n Network) Matches(annotation string) bool {
	annotation = strings.TrimSpace(annotation)
	return annotation != "" && (annotation == n.Name || annotation == n.String())
}

// Differs reports whether a range's harvesterNetworkName annotation surely names another network
// than this one: it names a network that does not match, and is not namespace/name of this
// network's name when this one was given bare (in a namespace not known, so possibly that one).
func (n Network) Differs(annotation string) bool {
	annotation = strings.TrimSpace(annotation)
	if annotation == "" || n.Matches(annotation) {
		return false
	}
	if _, name, ok := strings.Cut(annotation, "/"); ok && n.Namespace == "" && name == n.Name {
		return false
	}
	return true
}

// Choice is the network discovery goes by and where it came from, for the Event that says so.
type Choice struct {
	Network Network
	// From says which field gave the network: "networkName" or "networkInfo interface 1 of 2".
	From string
	// Note, when not nil, is something worth an Event although the network was used.
	Note *problem.Problem
}

// networkInfo is the JSON the Harvester node driver keeps in a HarvesterConfig's networkInfo.
type networkInfo struct {
	Interfaces []struct {
		NetworkName string `json:"networkName"`
	} `json:"interfaces"`
}

// NetworkOf finds the network in a HarvesterConfig's fields (the object's root, as the node driver
// writes them). networkInfo, where Rancher 2.7 and later keep every interface, wins over the older
// networkName; when it is present but unusable that is a problem, not a reason to guess from
// networkName.
func NetworkOf(fields map[string]interface{}) (Choice, *problem.Problem) {
	switch info := fields["networkInfo"].(type) {
	case string:
		if strings.TrimSpace(info) != "" {
			return ParseNetworkInfo(info)
		}
	case map[string]interface{}, []interface{}:
		// A person or a tool wrote the JSON as an object instead of a string: read it all the same.
		data, err := json.Marshal(info)
		if err != nil {
			return Choice{}, problem.New(v1.ReasonInvalidNetwork, "networkInfo cannot be read: %v", err)
		}
		return ParseNetworkInfo(string(data))
	case nil:
	default:
		return Choice{}, problem.New(v1.ReasonInvalidNetwork, "networkInfo is a %T, not a JSON string", info)
	}
	switch name := fields["networkName"].(type) {
	case string:
		if strings.TrimSpace(name) != "" {
			return ParseNetworkName(name)
		}
	case nil:
	default:
		return Choice{}, problem.New(v1.ReasonInvalidNetwork, "networkName is a %T, not a string", name)
	}
	return Choice{}, problem.New(v1.ReasonInvalidNetwork, "has neither networkInfo nor networkName: no VM network to take the floating IP from")
}

// ParseNetworkName reads networkName: "namespace/name", or a bare "name", which is used with a note.
func ParseNetworkName(s string) (Choice, *problem.Problem) {
	n, p := parseNetwork(s)
	if p != nil {
		return Choice{}, problem.New(v1.ReasonInvalidNetwork, "networkName %s %s", redact.Quote(s, MaxQuoted), p.Message)
	}
	c := Choice{Network: n, From: "networkName"}
	if n.Namespace == "" {
		c.Note = problem.New(v1.ReasonNetworkWithoutNamespace,
			"networkName %s has no namespace (expected namespace/name); ranges are matched by the name %s alone", redact.Quote(s, MaxQuoted), n.Name)
	}
	return c, nil
}

// ParseNetworkInfo reads networkInfo, the JSON list of a VM's interfaces, and takes the first
// interface that names a network: the VM's first NIC is where kube-vip's default interface (enp1s0)
// is, so it is the network the floating IP must belong to.
func ParseNetworkInfo(s string) (Choice, *problem.Problem) {
	var info networkInfo
	if err := json.Unmarshal([]byte(s), &info); err != nil {
		return Choice{}, problem.New(v1.ReasonInvalidNetwork, "networkInfo is not the JSON the Harvester node driver writes (%v)", err)
	}
	if len(info.Interfaces) == 0 {
		return Choice{}, problem.New(v1.ReasonInvalidNetwork, "networkInfo lists no interfaces")
	}
	for i, iface := range info.Interfaces {
		if strings.TrimSpace(iface.NetworkName) == "" {
			continue
		}
		n, p := parseNetwork(iface.NetworkName)
		if p != nil {
			return Choice{}, problem.New(v1.ReasonInvalidNetwork, "networkInfo interface %d: networkName %s %s", i+1, redact.Quote(iface.NetworkName, MaxQuoted), p.Message)
		}
		c := Choice{Network: n, From: fmt.Sprintf("networkInfo interface %d of %d", i+1, len(info.Interfaces))}
		if n.Namespace == "" {
			c.Note = problem.New(v1.ReasonNetworkWithoutNamespace,
				"networkInfo interface %d names network %s without a namespace; ranges are matched by that name alone", i+1, redact.Quote(n.Name, MaxQuoted))
		}
		return c, nil
	}
	return Choice{}, problem.New(v1.ReasonInvalidNetwork, "none of the %d networkInfo interfaces has a networkName", len(info.Interfaces))
}

// parseNetwork splits "namespace/name" or takes a bare name.
func parseNetwork(s string) (Network, *problem.Problem) {
	parts := strings.Split(strings.TrimSpace(s), "/")
	if len(parts) > 2 || slices.ContainsFunc(parts, func(p string) bool { return p == "" || strings.TrimSpace(p) != p }) {
		return Network{}, problem.New(v1.ReasonInvalidNetwork, "is not namespace/name")
	}
	n := Network{Name: parts[len(parts)-1]}
	if len(parts) == 2 {
		n.Namespace = parts[0]
	}
	// The network is a NetworkAttachmentDefinition: its namespace a DNS-1123 label, its name a
	// DNS-1123 subdomain. Anything else names no network, and is not copied any further.
	if n.Namespace != "" && len(validation.IsDNS1123Label(n.Namespace)) > 0 {
		return Network{}, problem.New(v1.ReasonInvalidNetwork,
			"is not namespace/name: the namespace must be a DNS-1123 label (at most 63 lower-case letters, digits and '-')")
	}
	if len(validation.IsDNS1123Subdomain(n.Name)) > 0 {
		return Network{}, problem.New(v1.ReasonInvalidNetwork,
			"is not namespace/name: the name must be a DNS-1123 subdomain (at most 253 lower-case letters, digits, '-' and '.')")
	}
	return n, nil
}
