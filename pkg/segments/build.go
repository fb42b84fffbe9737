package segments

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// page is one page of a list, as the API server writes it. Items stay raw only until each is
// decoded into its kind's small struct, so that one malformed object is skipped, not the page.
type page struct {
	Metadata struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// errNotAList means an answer was JSON but not a list.
var errNotAList = errors.New("the answer is not a list")

// decodePage reads one page of a list: its items and the token of the next page ("" for the last).
func decodePage(body []byte) ([]json.RawMessage, string, error) {
	var p page
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, "", fmt.Errorf("the answer is not a list: %s", redact.Shorten(err.Error(), redact.MaxValue))
	}
	if p.Items == nil {
		// An empty list still has its items, [] or null; an answer without them (a Status, "{}",
		// "null") is no list, and must not pass for an empty one.
		var probe map[string]json.RawMessage
		if json.Unmarshal(body, &probe) != nil {
			return nil, "", errNotAList
		}
		if _, ok := probe["items"]; !ok {
			return nil, "", errNotAList
		}
	}
	return p.Items, p.Metadata.Continue, nil
}

// objectName is what names any object, decoded on its own when the object as a whole does not
// decode, so that the skip can say which one it was.
type objectName struct {
	Metadata struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"metadata"`
}

// nameOf names a raw object for View.Skipped, as well as it can.
func nameOf(item []byte) string {
	var o objectName
	if json.Unmarshal(item, &o) != nil || o.Metadata.Name == "" {
		return "(an object without a name)"
	}
	return shortName(o.Metadata.Namespace, o.Metadata.Name)
}

// shortName is "namespace/name" (or name), cut to redact.MaxValue bytes: a skipped object's name
// is untrusted, and only kept for a message.
func shortName(namespace, name string) string {
	if namespace != "" {
		name = namespace + "/" + name
	}
	return redact.Shorten(name, redact.MaxValue)
}

// validNames reports whether namespace (when not empty) and name are what the API server allows:
// only such names go into a Network, a Claim's Object or an Interface, where a message may repeat
// them without quoting.
func validNames(namespace, name string) bool {
	if namespace != "" && len(validation.IsDNS1123Label(namespace)) > 0 {
		return false
	}
	return name != "" && len(validation.IsDNS1123Subdomain(name)) == 0
}

// splitNetwork reads a NAD reference "namespace/name"; a bare name takes namespace def, and with
// def "" it is refused.
func splitNetwork(ref, def string) (string, bool) {
	ns, name, found := strings.Cut(ref, "/")
	if !found {
		ns, name = def, ref
	}
	if ns == "" || !validNames(ns, name) {
		return "", false
	}
	return ns + "/" + name, true
}

// parseAddr reads one address as net.ParseIP reads it, which is how Harvester's components read
// theirs: an IPv4-mapped IPv6 address is its IPv4 address; zones are refused.
func parseAddr(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// builder makes a View from objects as they are read: NADs first, as everything else is placed
// on a segment through them, then pools, then VirtualMachines (for their guest label), then
// VirtualMachineInstances.
type builder struct {
	v *View
	// nads are the networks read so far, by "namespace/name".
	nads map[string]Network
}

func newBuilder(cluster string) *builder {
	return &builder{v: &View{Cluster: cluster}, nads: map[string]Network{}}
}

// add reads one object of kind k into the view, or skips it.
func (b *builder) add(k Kind, item []byte) {
	switch k {
	case KindNetwork:
		n, err := parseNAD(b.v.Cluster, item)
		if err != nil {
			b.v.skip(k, nameOf(item))
			return
		}
		if _, dup := b.nads[n.String()]; dup {
			return
		}
		b.nads[n.String()] = n
		b.v.Networks = append(b.v.Networks, n)
	case KindLoadBalancerPool:
		claims, err := parseLBPool(item, b.segmentOf)
		if err != nil {
			b.v.skip(k, nameOf(item))
			return
		}
		b.v.Claims = append(b.v.Claims, claims...)
	case KindDHCPPool:
		claims, err := parseDHCPPool(item, b.segmentOf)
		if err != nil {
			b.v.skip(k, nameOf(item))
			return
		}
		b.v.Claims = append(b.v.Claims, claims...)
	case KindVM:
		ifaces, claims, partial, err := parseVMI(item, b.segmentOf)
		if err != nil || partial {
			b.v.skip(k, nameOf(item))
		}
		if err != nil {
			return
		}
		b.v.Interfaces = append(b.v.Interfaces, ifaces...)
		b.v.Claims = append(b.v.Claims, claims...)
	}
}

// segmentOf is the segment of the NAD "namespace/name", and whether it was read.
func (b *builder) segmentOf(ref string) (Segment, bool) {
	n, ok := b.nads[ref]
	return n.Segment, ok
}

// view is the view built, sorted and indexed.
func (b *builder) view() *View {
	b.v.Reindex()
	return b.v
}

// segmentFunc finds a NAD's segment by "namespace/name".
type segmentFunc func(ref string) (Segment, bool)

// notFound is what a claim's Object adds when its network was not read.
func notFound(ref string) string { return " (network " + ref + " not found)" }
