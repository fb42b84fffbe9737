package installpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Patterns of kube-vip's variables. They are compiled once and only ever read.
var (
	// interfaceName is a Linux network interface name: at most 15 bytes, no slash or space.
	interfaceName = regexp.MustCompile(`^[A-Za-z0-9_.:@-]{1,15}$`)
	// listenAddress is [host]:port or :port, as prometheus_server takes it.
	listenAddress = regexp.MustCompile(`^(\[[0-9A-Fa-f:.]+\]|[0-9.]+|[a-z0-9.-]+)?:[0-9]{1,5}$`)
	// countOrPercent is an intstr of an update strategy.
	countOrPercent = regexp.MustCompile(`^[0-9]{1,9}%?$`)
	// subnetText is vip_subnet in either generation's form; the judge reads it per image.
	subnetText = regexp.MustCompile(`^/?[0-9]{1,3}(,/?[0-9]{1,3})?$`)
	// bgpPeers is kube-vip's list of peers: address:AS[:password[:multihop]], comma-separated,
	// IPv6 addresses in brackets.
	bgpPeers = regexp.MustCompile(`^[^\s,]+(,[^\s,]+)*$`)
	// wholeNumber and prefixLength are the numeric forms; kube-vip's own parse bounds them.
	wholeNumber  = regexp.MustCompile(`^-?[0-9]{1,19}$`)
	prefixLength = regexp.MustCompile(`^[0-9]{1,3}$`)
)

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

// kubevipEnv are the variables a configuration may set: those the generation table knows, less
// the ones that would point kube-vip away from the guest or at files: kubernetes_addr and
// k8s_config_file (another API server, which would receive kube-vip's token), provider_config and
// vip_packet* (Equinix Metal's API), zebra_* (a routing daemon's socket on the host), enable_upnp
// (port forwarding on the network's router), mirror_dest_interface (a copy of the traffic) and
// egress_* (rewriting the node's egress rules for other pods).
func kubevipEnv() map[string]envCheck {
	checks := map[string]envCheck{}
	excluded := map[string]bool{
		"kubernetes_addr": true, "k8s_config_file": true, "provider_config": true,
		"vip_packet": true, "vip_packetproject": true, "vip_packetprojectid": true,
		"zebra_enable": true, "zebra_url": true, "zebra_software_name": true, "zebra_version": true,
		"enable_upnp": true, "mirror_dest_interface": true,
		"egress_podcidr": true, "egress_servicecidr": true, "egress_withnftables": true, "egress_clean": true,
	}
	for _, g := range Generations() {
		for name, kind := range g.Env {
			if excluded[name] {
				continue
			}
			checks[name] = kindCheck(kind)
		}
	}
	dnsLabel := named(validation.IsDNS1123Label, "a DNS label")
	dnsSubdomain := named(validation.IsDNS1123Subdomain, "a DNS subdomain")
	qualifiedName := named(validation.IsQualifiedName, "a qualified name such as example.com/name")
	for name, check := range map[string]envCheck{
		"address": ipAddress, "vip_address": ipAddress,
		"vip_interface": iface, "vip_servicesinterface": iface, "bgp_routerinterface": iface, "bgp_sourceif": iface,
		"bgp_routerid": ipAddress, "bgp_sourceip": ipAddress, "bgp_peeraddress": ipAddress,
		"mpbgp_nexthop": oneOf("fixed", "auto_sourceif", "auto_sourceip"), "mpbgp_ipv4": ipAddress, "mpbgp_ipv6": ipAddress,
		"vip_leasename": dnsSubdomain, "svc_leasename": dnsSubdomain, "vip_nodename": dnsSubdomain,
		"cp_namespace": dnsLabel, "svc_namespace": dnsLabel,
		"lb_class_name":     qualifiedName,
		"lb_fwdmethod":      oneOf("local", "masquerade", "tunnel", "direct", "bypass"),
		"dns_mode":          oneOf("first", "ipv4", "ipv6", "dual"),
		"iptables_backend":  oneOf("legacy", "nft"),
		"prometheus_server": matches(listenAddress, "[host]:port, such as :2112"),
		"bgp_peers":         matches(bgpPeers, "address:AS[:password[:multihop]], comma-separated"),
		"vip_cidr":          matches(prefixLength, "a prefix length"),
		"annotation":        qualifiedName,
	} {
		if _, ok := checks[name]; ok {
			checks[name] = check
		}
	}
	return checks
}

// KubevipEnvNames are the kube-vip variables a configuration may set, sorted.
func KubevipEnvNames() []string {
	names := make([]string, 0, len(kubevipEnv()))
	for name := range kubevipEnv() {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// checkEnv validates env.<name>=value.
func checkEnv(name, value string) error {
	check, ok := kubevipEnv()[name]
	if !ok {
		return fmt.Errorf("env.%s is not a kube-vip variable the operator supports", shorten(name))
	}
	if value == "" {
		return nil
	}
	if err := check(value); err != nil {
		return fmt.Errorf("env.%s %w", name, err)
	}
	return nil
}

// kindCheck is the form kube-vip parses a variable of kind in; the subnet kinds accept either
// generation's form, and the judge reads them per image once the image is known.
func kindCheck(kind EnvKind) envCheck {
	switch kind {
	case EnvBool:
		return func(v string) error {
			if _, err := strconv.ParseBool(v); err != nil {
				return errors.New("must be true or false")
			}
			return nil
		}
	case EnvInt32, EnvInt64, EnvUint16, EnvUint32:
		return matches(wholeNumber, "a whole number")
	case EnvJSON:
		return func(v string) error {
			var m map[string]string
			if json.Unmarshal([]byte(v), &m) != nil {
				return errors.New("must be a JSON object of strings")
			}
			return nil
		}
	case EnvSubnetSuffix, EnvSubnetBits:
		return matches(subnetText, `a prefix length such as "32" or "32,128"`)
	}
	return text
}

func ipAddress(v string) error {
	if _, err := netip.ParseAddr(v); err != nil {
		return errors.New("must be an IP address")
	}
	return nil
}

func iface(v string) error {
	if !interfaceName.MatchString(v) {
		return errors.New("must be a network interface name")
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
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
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
