package harvester

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// Family is an IP address family; the zero Family is none known.
type Family int

// The two address families.
const (
	IPv4 Family = 4
	IPv6 Family = 6
)

func (f Family) String() string {
	switch f {
	case IPv4:
		return "IPv4"
	case IPv6:
		return "IPv6"
	}
	return "unknown family"
}

// Other is the other family; none for none.
func (f Family) Other() Family {
	switch f {
	case IPv4:
		return IPv6
	case IPv6:
		return IPv4
	}
	return 0
}

// FamilyOfAddr is the family of an address; none for the zero Addr. An IPv4-mapped IPv6 address is
// IPv6, as it is written.
func FamilyOfAddr(a netip.Addr) Family {
	switch {
	case a.Is4():
		return IPv4
	case a.Is6():
		return IPv6
	}
	return 0
}

// FamilyOfCIDR is the family of a range's iprange, read as the allocator reads it: none for
// anything that is not a CIDR, or is an IPv4-mapped IPv6 one, which no range hands out from.
func FamilyOfCIDR(cidr string) Family {
	p, err := netip.ParsePrefix(cidr)
	if err != nil || p.Addr().Is4In6() {
		return 0
	}
	return FamilyOfAddr(p.Addr())
}

// The keys of a provisioning cluster's spec.rkeConfig.machineGlobalConfig, RKE2's and K3s's
// configuration, that list the pod and Service networks; both list a CIDR of each family in a
// dual-stack cluster.
const (
	ClusterCIDRKey = "cluster-cidr"
	ServiceCIDRKey = "service-cidr"
)

// Bounds on what is read of a CIDR key: a dual-stack cluster lists two CIDRs, one of each family,
// in well under a hundred characters. Anything larger is not a cluster configuration to act on.
const (
	maxCIDRValue = 1024
	maxCIDRs     = 16
)

// Stack is what a provisioning cluster says of its address families.
type Stack struct {
	// DualStack is true when both cluster-cidr and service-cidr list an IPv4 and an IPv6 CIDR.
	DualStack bool
	// Note says, for the debug log, why a cluster whose CIDR keys say something of dual-stack is
	// taken as single-stack: one key lists both families and the other does not, or a key cannot
	// be read. Empty when there is nothing to say.
	Note string
}

// StackOf reads a provisioning cluster's address families from spec.rkeConfig.machineGlobalConfig
// (rancher/rancher pkg/apis/rke.cattle.io/v1 RKEClusterSpecCommon.MachineGlobalConfig, a
// GenericMap, embedded in the provisioning RKEConfig). A cluster without rkeConfig or without the
// keys is single-stack, as every cluster was before.
func StackOf(c *provv1.Cluster) Stack {
	if c == nil || c.Spec.RKEConfig == nil {
		return Stack{}
	}
	return ParseStack(c.Spec.RKEConfig.MachineGlobalConfig.Data)
}

// ParseStack reads cluster-cidr and service-cidr from a machineGlobalConfig. Each value is a
// comma-separated string of CIDRs, or a list of such strings, as Rancher reads service-cidr itself
// (convert.ToStringSlice, then split at commas, in pkg/capr/planner primaryAddressFamily). The
// values are anybody's to write: a wrong type, a value that is not a CIDR or one beyond the bounds
// makes the key unreadable, and the cluster single-stack, with a note.
func ParseStack(config map[string]interface{}) Stack {
	cluster, clusterNote := cidrFamilies(config, ClusterCIDRKey)
	service, serviceNote := cidrFamilies(config, ServiceCIDRKey)
	if cluster.both() && service.both() {
		return Stack{DualStack: true}
	}
	notes := slices.DeleteFunc([]string{clusterNote, serviceNote}, func(n string) bool { return n == "" })
	if cluster.both() != service.both() && len(notes) == 0 {
		dual, single, singleFamilies := ClusterCIDRKey, ServiceCIDRKey, service
		if service.both() {
			dual, single, singleFamilies = ServiceCIDRKey, ClusterCIDRKey, cluster
		}
		notes = append(notes, fmt.Sprintf("%s lists IPv4 and IPv6 but %s lists %s", dual, single, singleFamilies))
	}
	if len(notes) == 0 {
		return Stack{}
	}
	return Stack{Note: "single-stack: " + strings.Join(notes, "; ")}
}

// familySet is the families a CIDR key lists.
type familySet struct{ v4, v6 bool }

func (s familySet) both() bool { return s.v4 && s.v6 }

func (s familySet) String() string {
	switch {
	case s.both():
		return "IPv4 and IPv6"
	case s.v4:
		return "only IPv4"
	case s.v6:
		return "only IPv6"
	}
	return "nothing"
}

// cidrFamilies reads the families key lists. A key that is absent or empty lists none; one that
// cannot be read lists none, and the note says why (without repeating more than a short quote).
func cidrFamilies(config map[string]interface{}, key string) (familySet, string) {
	raw, ok := config[key]
	if !ok || raw == nil {
		return familySet{}, ""
	}
	values, why := stringList(raw)
	if why != "" {
		return familySet{}, key + " " + why
	}
	size := 0
	for _, value := range values {
		if size += len(value); size > maxCIDRValue {
			return familySet{}, fmt.Sprintf("%s is longer than %d characters", key, maxCIDRValue)
		}
	}
	var set familySet
	count := 0
	for _, value := range values {
		for _, entry := range strings.Split(value, ",") {
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			if count++; count > maxCIDRs {
				return familySet{}, key + " " + tooMany()
			}
			switch FamilyOfCIDR(entry) {
			case IPv4:
				set.v4 = true
			case IPv6:
				set.v6 = true
			default:
				return familySet{}, fmt.Sprintf("%s lists %s, which is not a CIDR", key, redact.Quote(entry, MaxQuoted))
			}
		}
	}
	return set, ""
}

func tooMany() string { return fmt.Sprintf("lists more than %d CIDRs", maxCIDRs) }

// stringList reads a string, or a list of at most maxCIDRs strings; else it says why not.
func stringList(v interface{}) ([]string, string) {
	switch v := v.(type) {
	case string:
		return []string{v}, ""
	case []string:
		if len(v) > maxCIDRs {
			return nil, tooMany()
		}
		return v, ""
	case []interface{}:
		if len(v) > maxCIDRs {
			return nil, tooMany()
		}
		out := make([]string, 0, len(v))
		for i, item := range v {
			s, ok := item.(string)
			if !ok {
				return nil, fmt.Sprintf("item %d is a %T, not a string", i+1, item)
			}
			out = append(out, s)
		}
		return out, ""
	}
	return nil, fmt.Sprintf("is a %T, not a string", v)
}
