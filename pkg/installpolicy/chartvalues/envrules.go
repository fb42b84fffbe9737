package chartvalues

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// IsInterfaceName reports whether name is what kube-vip's interface variables may hold: a Linux
// network interface name.
func IsInterfaceName(name string) bool { return interfaceName.MatchString(name) }

// Patterns of kube-vip's variables. They are compiled once and only ever read.
var (
	// interfaceName is a Linux network interface name: at most 15 bytes, no slash or space.
	interfaceName = regexp.MustCompile(`^[A-Za-z0-9_.:@-]{1,15}$`)
	// listenAddress is [host]:port or :port, as prometheus_server takes it.
	listenAddress = regexp.MustCompile(`^(\[[0-9A-Fa-f:.]+\]|[0-9.]+)?:([0-9]{1,5})$`)
	// countOrPercent is an intstr of an update strategy.
	countOrPercent = regexp.MustCompile(`^[0-9]{1,9}%?$`)
	// subnetText is vip_subnet in either generation's form; the judge reads it per image.
	subnetText = regexp.MustCompile(`^/?[0-9]{1,3}(,/?[0-9]{1,3})?$`)
	// bgpPeers is kube-vip's list of peers: address:AS[:password[:multihop]], comma-separated,
	// IPv6 addresses in brackets.
	bgpPeers = regexp.MustCompile(`^[^\s,]+(,[^\s,]+)*$`)
	// prefixLength is vip_cidr.
	prefixLength = regexp.MustCompile(`^[0-9]{1,3}$`)
)

// Mode is one of kube-vip's ways of announcing an address. The product's own mode, which needs no
// switch, is ARP for LoadBalancer Services on the node's interface; every other mode changes the
// node's routing, talks to routers or DHCP servers, or floats the control plane's own address, so
// its variables are refused unless the deployment names the mode (--allowed-kubevip-modes).
type Mode string

const (
	// ModeServices is the product's mode: ARP for LoadBalancer Services. Always allowed.
	ModeServices Mode = ""
	// ModeBGP announces addresses to BGP peers.
	ModeBGP Mode = "bgp"
	// ModeRoutingTable writes addresses as routes into a routing table of the node.
	ModeRoutingTable Mode = "routingtable"
	// ModeDHCP asks the network's DHCP server for addresses (vip_ddns).
	ModeDHCP Mode = "dhcp"
	// ModeControlPlane floats the guest's control-plane address.
	ModeControlPlane Mode = "controlplane"
)

// Modes are the modes a deployment may allow, in the order messages list them.
func Modes() []Mode { return []Mode{ModeBGP, ModeRoutingTable, ModeDHCP, ModeControlPlane} }

// ParseModes reads the deployment's allowed kube-vip modes, in any case. Empty entries are skipped.
func ParseModes(list []string) (map[Mode]bool, error) {
	out := map[Mode]bool{}
	names := make([]string, 0, len(Modes()))
	for _, m := range Modes() {
		names = append(names, string(m))
	}
	for _, raw := range list {
		if raw = strings.TrimSpace(raw); raw == "" {
			continue
		}
		i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(raw, n) })
		if i < 0 {
			return nil, fmt.Errorf("allowed kube-vip mode %q is not one of %s", guestchart.Shorten(raw), strings.Join(names, ", "))
		}
		out[Modes()[i]] = true
	}
	return out, nil
}

// envValue is one value of the env map: YAML's scalars as the chart's quote prints them.
type envValue string

func (e *envValue) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) > 0 && data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*e = envValue(s)
	case bytes.Equal(data, []byte("true")), bytes.Equal(data, []byte("false")):
		*e = envValue(data)
	case len(data) > 0 && (data[0] == '-' || (data[0] >= '0' && data[0] <= '9')):
		var n json.Number
		if err := json.Unmarshal(data, &n); err != nil {
			return err
		}
		*e = envValue(n.String())
	default:
		return errors.New("an env value must be a string, a number or a boolean")
	}
	return nil
}

// envCheck validates one variable's value as the operator allows it; "" always passes (kube-vip
// reads an empty variable as unset).
type envCheck func(string) error

// envRule is one variable a configuration may set: the mode that needs it, the values it may
// take there, and whether the pod's own fields may fill it (envValueFrom).
type envRule struct {
	mode  Mode
	check envCheck
	// fromPod allows envValueFrom with a fieldRef of the pod's own address.
	fromPod bool
}

// envRules is the allow-list of kube-vip's variables, by what they mean. Every variable kube-vip
// reads that is not here is refused whatever its value: among them those that point kube-vip at
// another API server (kubernetes_addr, k8s_config_file) or at files and sockets of the node
// (provider_config, zebra_*), take another component's Lease or namespace (svc_leasename,
// svc_namespace, vip_nodename), write to nodes or other pods' traffic (enable_node_labeling,
// egress_*, mirror_dest_interface, enable_upnp), or stop kube-vip from reporting the address it
// serves (disable_service_updates).
func envRules() map[string]envRule {
	iface := matches(interfaceName, "a network interface name")
	bgp := func(check envCheck) envRule { return envRule{mode: ModeBGP, check: check} }
	cp := func(check envCheck) envRule { return envRule{mode: ModeControlPlane, check: check} }
	return map[string]envRule{
		// ARP for Services: the interface, the address's mask, the election and metrics.
		"vip_interface":         {check: iface},
		"vip_servicesinterface": {check: iface},
		"vip_subnet":            {check: matches(subnetText, `a prefix length such as "32" or "32,128"`)},
		"vip_cidr":              {check: matches(prefixLength, "a prefix length")},
		"vip_arp":               {check: oneOf("true")},
		"svc_enable":            {check: oneOf("true")},
		"svc_election":          {check: boolean},
		"lb_class_only":         {check: boolean},
		"vip_arpRate":           {check: between(1, 3600000)},
		"vip_leaseduration":     {check: between(1, 3600)},
		"vip_renewdeadline":     {check: between(1, 3600)},
		"vip_retryperiod":       {check: between(1, 3600)},
		"vip_loglevel":          {check: between(0, 9)},
		"prometheus_server":     {check: listenPort},
		// BGP.
		"bgp_enable":             bgp(boolean),
		"bgp_routerid":           {mode: ModeBGP, check: ipAddress, fromPod: true},
		"bgp_routerinterface":    bgp(iface),
		"bgp_sourceif":           bgp(iface),
		"bgp_sourceip":           {mode: ModeBGP, check: ipAddress, fromPod: true},
		"bgp_as":                 bgp(between(1, 4294967295)),
		"bgp_peeras":             bgp(between(1, 4294967295)),
		"bgp_peeraddress":        bgp(ipAddress),
		"bgp_peerpass":           bgp(text),
		"bgp_peers":              bgp(matches(bgpPeers, "address:AS[:password[:multihop]], comma-separated")),
		"bgp_multihop":           bgp(boolean),
		"bgp_hold_time":          bgp(between(3, 65535)),
		"bgp_keepalive_interval": bgp(between(1, 65535)),
		"mpbgp_nexthop":          bgp(oneOf("fixed", "auto_sourceif", "auto_sourceip")),
		"mpbgp_ipv4":             bgp(ipAddress),
		"mpbgp_ipv6":             bgp(ipAddress),
		// A routing table of kube-vip's own: never the node's main, local or default table, whose
		// routes kube-vip's clean-up would delete (vip_cleanroutingtable).
		"vip_routingtable":      {mode: ModeRoutingTable, check: boolean},
		"vip_routingtableid":    {mode: ModeRoutingTable, check: ownRoutingTable},
		"vip_routingtabletype":  {mode: ModeRoutingTable, check: between(0, 11)},
		"vip_routingprotocol":   {mode: ModeRoutingTable, check: between(0, 255)},
		"vip_cleanroutingtable": {mode: ModeRoutingTable, check: boolean},
		// DHCP.
		"vip_ddns": {mode: ModeDHCP, check: boolean},
		"dns_mode": {mode: ModeDHCP, check: oneOf("first", "ipv4", "ipv6", "dual")},
		// The control plane's address.
		"cp_enable":          cp(boolean),
		"cp_detect":          cp(boolean),
		"cp_namespace":       cp(named(validation.IsDNS1123Label, "a DNS label")),
		"vip_leaderelection": cp(boolean),
		"vip_leasename":      cp(named(validation.IsDNS1123Subdomain, "a DNS subdomain")),
		"address":            cp(ipAddress),
		"vip_address":        cp(ipAddress),
		"port":               cp(between(1, 65535)),
		"lb_enable":          cp(boolean),
		"lb_port":            cp(between(1, 65535)),
		"lb_fwdmethod":       cp(oneOf("local", "masquerade", "tunnel", "direct", "bypass")),
	}
}

// envRule returns the rule of name when the policy's modes allow it.
func (s Schema) envRule(name string) (envRule, bool) {
	r, ok := envRules()[name]
	if !ok || (r.mode != ModeServices && !s.Modes[r.mode]) {
		return envRule{}, false
	}
	return r, true
}

// KubevipEnvNames are the kube-vip variables of mode, sorted.
func KubevipEnvNames(mode Mode) []string {
	var names []string
	for name, r := range envRules() {
		if r.mode == mode {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// CheckEnvVar judges one variable of a rendered kube-vip container that is not as in the chart's
// own render: a value its rule allows, or the pod's address where the rule allows that.
func (s Schema) CheckEnvVar(e corev1.EnvVar) error {
	rule, ok := s.envRule(e.Name)
	if !ok || e.ValueFrom == nil {
		return s.checkEnv(e.Name, e.Value)
	}
	ref := e.ValueFrom.FieldRef
	if !rule.fromPod || e.Value != "" || *e.ValueFrom != (corev1.EnvVarSource{FieldRef: ref}) || !podAddress(ref) {
		return fmt.Errorf("%s may not be filled from elsewhere: only bgp_routerid and bgp_sourceip, from the pod's address", guestchart.Shorten(e.Name))
	}
	return nil
}

// CheckMonitoringPort allows kube-vip's one port: monitoring, TCP, where env's prometheus_server
// serves its metrics, and nothing of the host.
func CheckMonitoringPort(env []corev1.EnvVar, p corev1.ContainerPort) error {
	served := ""
	for _, e := range env {
		if e.Name == "prometheus_server" && e.ValueFrom == nil {
			if m := listenAddress.FindStringSubmatch(e.Value); m != nil {
				served = m[2]
			}
		}
	}
	want := corev1.ContainerPort{Name: "monitoring", ContainerPort: p.ContainerPort, Protocol: p.Protocol}
	if p != want || (p.Protocol != "" && p.Protocol != corev1.ProtocolTCP) || p.ContainerPort < 1 || served != fmt.Sprint(p.ContainerPort) {
		return fmt.Errorf("may only be the monitoring port (TCP, no hostPort or hostIP) at the port of env prometheus_server")
	}
	return nil
}

// checkEnv validates env.<name>=value.
func (s Schema) checkEnv(name, value string) error {
	r, ok := s.envRule(name)
	if !ok {
		if rule, known := envRules()[name]; known {
			return fmt.Errorf("env.%s belongs to kube-vip's %s mode, which the deployment does not allow (--allowed-kubevip-modes)", name, rule.mode)
		}
		return fmt.Errorf("env.%s is not a kube-vip variable the operator supports", guestchart.Shorten(name))
	}
	if value == "" {
		return nil
	}
	if err := r.check(value); err != nil {
		return fmt.Errorf("env.%s %w", name, err)
	}
	return nil
}

func boolean(v string) error {
	if _, err := strconv.ParseBool(v); err != nil {
		return errors.New("must be true or false")
	}
	return nil
}

// between is a whole number from lo to hi.
func between(lo, hi int64) envCheck {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be a whole number from %d to %d", lo, hi)
		}
		return nil
	}
}

// ownRoutingTable is a routing table id that is not one of the node's own: 0 (unspecified), 253
// (default), 254 (main) and 255 (local) hold the routes the node lives on.
func ownRoutingTable(v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > 2147483647 || (n >= 253 && n <= 255) {
		return errors.New("must be a routing table of kube-vip's own: a whole number from 1 up, not 253, 254 or 255 (the node's default, main and local tables)")
	}
	return nil
}

// listenPort is prometheus_server: [address]:port with a port from 1 to 65535.
func listenPort(v string) error {
	m := listenAddress.FindStringSubmatch(v)
	if m == nil {
		return errors.New("must be [address]:port, such as :2112")
	}
	if n, err := strconv.Atoi(m[2]); err != nil || n < 1 || n > 65535 {
		return errors.New("must have a port from 1 to 65535")
	}
	if host := strings.Trim(m[1], "[]"); host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			return errors.New("must be [address]:port with an IP address")
		}
	}
	return nil
}

func ipAddress(v string) error {
	if _, err := netip.ParseAddr(v); err != nil {
		return errors.New("must be an IP address")
	}
	return nil
}

// named checks a name by one of apimachinery's validators, saying what it must be.
func named(validate func(string) []string, what string) envCheck {
	return func(v string) error {
		if len(validate(v)) > 0 {
			return errors.New("must be " + what)
		}
		return nil
	}
}

// text is any other string of at most 1,024 bytes; the control and format characters were
// refused before.
func text(v string) error {
	if len(v) > 1024 {
		return errors.New("must be at most 1024 bytes")
	}
	return nil
}

func oneOf(allowed ...string) envCheck {
	return func(v string) error {
		if slices.Contains(allowed, v) {
			return nil
		}
		return fmt.Errorf("must be %s", strings.Join(allowed, " or "))
	}
}

func matches(re *regexp.Regexp, form string) envCheck {
	return func(v string) error {
		if !re.MatchString(v) {
			return fmt.Errorf("must be %s", form)
		}
		return nil
	}
}

// intOrPercent is an intstr as text, "" when unset.
func intOrPercent(v *intstr.IntOrString) string {
	if v == nil {
		return ""
	}
	return v.String()
}
