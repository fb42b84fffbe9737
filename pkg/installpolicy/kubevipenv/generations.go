package kubevipenv

import (
	"maps"

	"github.com/Masterminds/semver/v3"
)

// EnvKind is how kube-vip parses one environment variable.
type EnvKind int

const (
	EnvString EnvKind = iota
	EnvBool           // strconv.ParseBool
	EnvInt32          // strconv.ParseInt(v, 10, 32)
	EnvInt64          // strconv.ParseInt(v, 10, 64)
	EnvUint16         // strconv.ParseUint(v, 10, 16)
	EnvUint32         // strconv.ParseUint(v, 10, 32)
	EnvJSON           // json.Unmarshal into a map of strings
	// EnvSubnetSuffix: appended to the address as it is, so it must be empty or "/<bits>" (before v0.9.0).
	EnvSubnetSuffix
	// EnvSubnetBits: a prefix length, "<bits>" or "<IPv4 bits>,<IPv6 bits>" (v0.9.0 and later).
	EnvSubnetBits
)

// Generation is a range of kube-vip releases that read the environment the same way, as read from
// the source of the release named in Source.
type Generation struct {
	Name string
	// From is the first release of the generation; Before the first one after it (nil: open).
	From, Before *semver.Version
	// Source is the release and files the table was read from.
	Source string
	Env    map[string]EnvKind
}

// Generations are the kube-vip generations the operator knows, oldest first. An image older than
// the first is refused: no source of it was read.
func Generations() []Generation {
	return []Generation{
		{
			Name:   "v0.6 to v0.8",
			From:   semver.MustParse("v0.6.0"),
			Before: semver.MustParse("v0.9.0"),
			Source: "kube-vip/kube-vip v0.6.4 pkg/kubevip/config_environment.go, pkg/kubevip/config_envvar.go and pkg/vip/address.go (NewConfig: netlink.ParseAddr(address + subnet)); vip_subnet is read the same way up to v0.8.10",
			Env: withCommon(map[string]EnvKind{
				"vip_subnet": EnvSubnetSuffix,
				// Used only for BGP, as "<address>/<vip_cidr>".
				"vip_cidr":            EnvString,
				"vip_loglevel":        EnvUint32,
				"vip_routingtableid":  EnvInt32,
				"port":                EnvInt32,
				"lb_port":             EnvInt32,
				"vip_packet":          EnvBool,
				"vip_packetproject":   EnvString,
				"vip_packetprojectid": EnvString,
				"provider_config":     EnvString,
			}),
		},
		{
			Name:   "v0.9 and later",
			From:   semver.MustParse("v0.9.0"),
			Source: "kube-vip/kube-vip v1.0.0 pkg/kubevip/config_environment.go, pkg/kubevip/config_envvar.go and pkg/vip/address.go (NewConfig: utils.FormatIPWithSubnetMask(address, subnet)); v0.9.2 and v1.0.4 read these variables the same way",
			Env: withCommon(map[string]EnvKind{
				"vip_subnet":                    EnvSubnetBits,
				"vip_loglevel":                  EnvInt32,
				"vip_routingtableid":            EnvInt64,
				"port":                          EnvUint16,
				"lb_port":                       EnvUint16,
				"vip_nodename":                  EnvString,
				"vip_interfaceloglobal":         EnvBool,
				"cp_detect":                     EnvBool,
				"kubernetes_addr":               EnvString,
				"lb_class_legacy_handling":      EnvBool,
				"dns_mode":                      EnvString,
				"disable_service_updates":       EnvBool,
				"vip_routingprotocol":           EnvInt32,
				"vip_cleanroutingtable":         EnvBool,
				"mpbgp_nexthop":                 EnvString,
				"mpbgp_ipv4":                    EnvString,
				"mpbgp_ipv6":                    EnvString,
				"bgp_hold_time":                 EnvUint32,
				"bgp_keepalive_interval":        EnvUint32,
				"k8s_config_file":               EnvString,
				"mirror_dest_interface":         EnvString,
				"iptables_backend":              EnvString,
				"backend_health_check_interval": EnvInt32,
				"health_check_port":             EnvInt32,
				"enable_endpoints":              EnvBool,
				"enable_upnp":                   EnvBool,
				"egress_clean":                  EnvString,
				"zebra_enable":                  EnvBool,
				"zebra_url":                     EnvString,
				"zebra_software_name":           EnvString,
				"zebra_version":                 EnvUint32,
			}),
		},
	}
}

// withCommon adds the variables both generations read the same way.
func withCommon(env map[string]EnvKind) map[string]EnvKind {
	common := map[string]EnvKind{
		"address": EnvString, "annotation": EnvString, "vip_address": EnvString, "vip_interface": EnvString,
		"vip_servicesinterface": EnvString, "vip_leasename": EnvString, "cp_namespace": EnvString,
		"svc_namespace": EnvString, "svc_leasename": EnvString, "lb_class_name": EnvString, "lb_fwdmethod": EnvString,
		"prometheus_server": EnvString, "egress_podcidr": EnvString, "egress_servicecidr": EnvString,
		"bgp_routerid": EnvString, "bgp_peerpass": EnvString, "bgp_sourceif": EnvString, "bgp_sourceip": EnvString,
		"bgp_peeraddress": EnvString, "bgp_peers": EnvString, "bgp_routerinterface": EnvString,
		"vip_arp": EnvBool, "vip_leaderelection": EnvBool, "cp_enable": EnvBool, "svc_enable": EnvBool,
		"svc_election": EnvBool, "lb_enable": EnvBool, "vip_ddns": EnvBool, "vip_singlenode": EnvBool,
		"vip_startleader": EnvBool, "lb_class_only": EnvBool, "vip_wireguard": EnvBool, "vip_routingtable": EnvBool,
		"bgp_enable": EnvBool, "bgp_multihop": EnvBool, "enable_service_security": EnvBool,
		"enable_node_labeling": EnvBool, "egress_withnftables": EnvBool,
		"vip_arpRate": EnvInt32, "vip_leaseduration": EnvInt32, "vip_renewdeadline": EnvInt32,
		"vip_retryperiod": EnvInt32, "vip_routingtabletype": EnvInt32,
		"bgp_as": EnvUint32, "bgp_peeras": EnvUint32,
		"vip_leaseannotations": EnvJSON,
	}
	maps.Copy(common, env)
	return common
}
