package kubevip

import "github.com/Masterminds/semver/v3"

// Kind is how kube-vip parses one environment variable.
type Kind int

const (
	String Kind = iota
	Bool        // strconv.ParseBool
	Int32       // strconv.ParseInt(v, 10, 32)
	Int64       // strconv.ParseInt(v, 10, 64)
	Uint16      // strconv.ParseUint(v, 10, 16)
	Uint32      // strconv.ParseUint(v, 10, 32)
	JSON        // json.Unmarshal into a map of strings
	// SubnetSuffix: appended to the address as it is, so it must be empty or "/<bits>" (before v0.9.0).
	SubnetSuffix
	// SubnetBits: a prefix length, "<bits>" or "<IPv4 bits>,<IPv6 bits>" (v0.9.0 and later).
	SubnetBits
)

// Generation is a range of kube-vip releases that read the environment the same way, as read from
// the source of the release named in Source.
type Generation struct {
	Name string
	// From is the first release of the generation; Before the first one after it (nil: open).
	From, Before *semver.Version
	// Source is the release and files the table was read from.
	Source string
	Env    map[string]Kind
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
			Env: withCommon(map[string]Kind{
				"vip_subnet": SubnetSuffix,
				// Used only for BGP, as "<address>/<vip_cidr>".
				"vip_cidr":            String,
				"vip_loglevel":        Uint32,
				"vip_routingtableid":  Int32,
				"port":                Int32,
				"lb_port":             Int32,
				"vip_packet":          Bool,
				"vip_packetproject":   String,
				"vip_packetprojectid": String,
				"provider_config":     String,
			}),
		},
		{
			Name:   "v0.9 and later",
			From:   semver.MustParse("v0.9.0"),
			Source: "kube-vip/kube-vip v1.0.0 pkg/kubevip/config_environment.go, pkg/kubevip/config_envvar.go and pkg/vip/address.go (NewConfig: utils.FormatIPWithSubnetMask(address, subnet)); v0.9.2 and v1.0.4 read these variables the same way",
			Env: withCommon(map[string]Kind{
				"vip_subnet":                    SubnetBits,
				"vip_loglevel":                  Int32,
				"vip_routingtableid":            Int64,
				"port":                          Uint16,
				"lb_port":                       Uint16,
				"vip_nodename":                  String,
				"vip_interfaceloglobal":         Bool,
				"cp_detect":                     Bool,
				"kubernetes_addr":               String,
				"lb_class_legacy_handling":      Bool,
				"dns_mode":                      String,
				"disable_service_updates":       Bool,
				"vip_routingprotocol":           Int32,
				"vip_cleanroutingtable":         Bool,
				"mpbgp_nexthop":                 String,
				"mpbgp_ipv4":                    String,
				"mpbgp_ipv6":                    String,
				"bgp_hold_time":                 Uint32,
				"bgp_keepalive_interval":        Uint32,
				"k8s_config_file":               String,
				"mirror_dest_interface":         String,
				"iptables_backend":              String,
				"backend_health_check_interval": Int32,
				"health_check_port":             Int32,
				"enable_endpoints":              Bool,
				"enable_upnp":                   Bool,
				"egress_clean":                  String,
				"zebra_enable":                  Bool,
				"zebra_url":                     String,
				"zebra_software_name":           String,
				"zebra_version":                 Uint32,
			}),
		},
	}
}

// withCommon adds the variables both generations read the same way.
func withCommon(env map[string]Kind) map[string]Kind {
	common := map[string]Kind{
		"address": String, "annotation": String, "vip_address": String, "vip_interface": String,
		"vip_servicesinterface": String, "vip_leasename": String, "cp_namespace": String,
		"svc_namespace": String, "svc_leasename": String, "lb_class_name": String, "lb_fwdmethod": String,
		"prometheus_server": String, "egress_podcidr": String, "egress_servicecidr": String,
		"bgp_routerid": String, "bgp_peerpass": String, "bgp_sourceif": String, "bgp_sourceip": String,
		"bgp_peeraddress": String, "bgp_peers": String, "bgp_routerinterface": String,
		"vip_arp": Bool, "vip_leaderelection": Bool, "cp_enable": Bool, "svc_enable": Bool,
		"svc_election": Bool, "lb_enable": Bool, "vip_ddns": Bool, "vip_singlenode": Bool,
		"vip_startleader": Bool, "lb_class_only": Bool, "vip_wireguard": Bool, "vip_routingtable": Bool,
		"bgp_enable": Bool, "bgp_multihop": Bool, "enable_service_security": Bool,
		"enable_node_labeling": Bool, "egress_withnftables": Bool,
		"vip_arpRate": Int32, "vip_leaseduration": Int32, "vip_renewdeadline": Int32,
		"vip_retryperiod": Int32, "vip_routingtabletype": Int32,
		"bgp_as": Uint32, "bgp_peeras": Uint32,
		"vip_leaseannotations": JSON,
	}
	for k, v := range env {
		common[k] = v
	}
	return common
}
