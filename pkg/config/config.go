package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ConfigMapName is the ConfigMap, in the operator's namespace, that Parse reads.
const ConfigMapName = "kube-fip-config"

// MaxOperateGuestClusterInterval caps operateGuestClusterInterval; see the
// package comment for why.
const MaxOperateGuestClusterInterval = 24 * time.Hour

// addressRetention (Config.AddressRetention) is how long the address of a deleted guest cluster
// stays retained for it, so that a cluster created again under the same Rancher provisioning
// namespace and name gets the same address back; 0 turns retention off. These are its default
// and its cap; see the package comment.
const (
	DefaultAddressRetention = 24 * time.Hour
	MaxAddressRetention     = 8760 * time.Hour // one year
)

// servedAddressHold (Config.ServedAddressHold) is how long an address a FloatingIP gave up stays
// kept while its guest cluster cannot be read; while it can, the guest's Services decide. 0
// releases such addresses at once. These are its default and its cap: a month is longer than any
// outage worth waiting for, and a slip of a unit cannot keep an address for good.
const (
	DefaultServedAddressHold = 24 * time.Hour
	MaxServedAddressHold     = 720 * time.Hour // 30 days
)

// The chart and image pair installed into guest clusters by default: one reviewed change moves
// them, with the data-plane test (the real kube-vip and kube-vip-cloud-provider serving the
// address) as its evidence; see docs/design.md#the-pinned-chart-and-image-pair.
//   - kube-vip chart 0.9.9 renders vip_subnet "32", which kube-vip reads as a prefix length since
//     v0.9.0. Its appVersion v1.0.4 is pinned down to v1.0.0, the newest release the data-plane test
//     can build; both read every variable the chart sets the same way.
//   - kube-vip-cloud-provider chart 0.2.10 with its appVersion v0.0.12.
//
// Each image is named by its tag and the digest of its multi-platform index, so that a tag moved
// in a registry changes nothing a guest runs, and at the repository whose digest is recorded. No
// registry is reachable where these are written; the digests are the ones public configurations
// that pin these releases record (renovate resolves them from the registries):
//   - kube-vip v1.0.0: randomcoww/homelab, config_env.tf (commit b2633599, "add current docker
//     image digests"), ghcr.io/kube-vip/kube-vip:v1.0.0@sha256:4f2565...
//   - kube-vip-cloud-provider v0.0.12: ArthurVardevanyan/HomeLab, kubernetes/renovate/README.md,
//     ghcr.io/kube-vip/kube-vip-cloud-provider:v0.0.12@sha256:f8f4e3... (the chart's own default,
//     kubevip/kube-vip-cloud-provider on Docker Hub, is another repository: no digest of it is
//     recorded, so it is not the one pinned).
//
// make release (scripts/release, package/release) resolves both tags in their registries and
// refuses to release when either answers another digest; docs/airgap.md says how an air-gapped
// deployment supplies its own.
//
// An empty kubevipChartVersion or kubevipCloudProviderChartVersion means these versions.
const (
	DefaultKubevipChartVersion              = "0.9.9"
	DefaultKubevipImage                     = DefaultKubevipImageRepository + ":" + DefaultKubevipImageTag
	DefaultKubevipCloudProviderChartVersion = "0.2.10"
	DefaultKubevipCloudProviderImage        = DefaultKubevipCloudProviderImageRepository + ":" + DefaultKubevipCloudProviderImageTag
)

// The pinned images' repositories, as the charts' values name them, and their tags with digests.
const (
	DefaultKubevipImageRepository              = "ghcr.io/kube-vip/kube-vip"
	DefaultKubevipImageTag                     = "v1.0.0@sha256:4f256554a83a6d824ea9c5307450a2c3fd132e09c52b339326f94fefaf67155c"
	DefaultKubevipCloudProviderImageRepository = "ghcr.io/kube-vip/kube-vip-cloud-provider"
	DefaultKubevipCloudProviderImageTag        = "v0.0.12@sha256:f8f4e3401f7637dd55faefb35571e731a477f65d5c3f062aef73dfd31a8da596"
)

// Default chart values: those of the original operator with the images above, and the interface
// under env.vip_interface, the key every kube-vip chart since 0.4.1 reads (config.vip_interface
// was read only by charts 0.3.7 and 0.4.0). The provider tolerates the control-plane taints
// whatever their value: the chart's own tolerations match them only without one, and RKE2's
// control-plane nodes are tainted node-role.kubernetes.io/control-plane=true, so on a guest of
// control-plane nodes alone the provider would never be scheduled.
const (
	DefaultKubevipChartValues = `env:
  vip_interface: enp1s0
  prometheus_server: ':8080'
image:
  repository: ghcr.io/kube-vip/kube-vip
  tag: v1.0.0@sha256:4f256554a83a6d824ea9c5307450a2c3fd132e09c52b339326f94fefaf67155c
nodeSelector:
  node-role.kubernetes.io/master: 'true'
`
	DefaultKubevipCloudProviderChartValues = `image:
  repository: ghcr.io/kube-vip/kube-vip-cloud-provider
  tag: v0.0.12@sha256:f8f4e3401f7637dd55faefb35571e731a477f65d5c3f062aef73dfd31a8da596
tolerations:
- key: node-role.kubernetes.io/control-plane
  operator: Exists
  effect: NoSchedule
- key: node-role.kubernetes.io/master
  operator: Exists
  effect: NoSchedule
`
)

// defaultRepoURL is the Helm repository of both charts unless kube-fip-config names another.
const defaultRepoURL = "https://kube-vip.io/helm-charts"

// InstallMode says whether kube-vip is installed into guest clusters.
type InstallMode string

const (
	InstallEnabled      InstallMode = "enabled"
	InstallDisabled     InstallMode = "disabled"
	InstallClusterLabel InstallMode = "clusterlabel"
)

// ClusterLabel is the guest-cluster label consulted by InstallClusterLabel.
const ClusterLabel = "kube-vip"

// Wants reports whether a cluster with the given labels should get kube-vip.
// An unknown mode wants nothing, because installing into clusters nobody
// asked for is worse than not installing.
func (m InstallMode) Wants(clusterLabels map[string]string) bool {
	switch m {
	case InstallEnabled:
		return true
	case InstallClusterLabel:
		// strconv.ParseBool, as the original: "true", "True", "1", "t" all count.
		b, err := strconv.ParseBool(strings.TrimSpace(clusterLabels[ClusterLabel]))
		return err == nil && b
	default:
		return false
	}
}

func (m InstallMode) valid() bool {
	return m == InstallEnabled || m == InstallDisabled || m == InstallClusterLabel
}

// Chart is one Helm chart installed into guest clusters. Ref and Version
// select an OCI chart; with Ref empty the chart comes from RepoURL.
type Chart struct {
	ReleaseName string
	RepoURL     string
	Ref         string
	Version     string
	// Values is ValuesYAML decoded; never nil. Treat it as read-only: Parse
	// hands out fresh maps, but a Config copied by value shares them.
	Values map[string]interface{}
	// ValuesYAML is the text the values came from, kept so consumers can pass
	// it on without a lossy re-encoding.
	ValuesYAML string
}

// Keys returns every known ConfigMap key in a stable order (the order of the
// table of options, allOptions).
func Keys() []string {
	opts := allOptions()
	keys := make([]string, len(opts))
	for i, o := range opts {
		keys[i] = o.key
	}
	return keys
}

// Equal reports whether two configs are identical, including the verbatim
// values text: a comment-only edit of the values counts as a change, which
// costs at most one redundant reconcile.
func (c Config) Equal(o Config) bool {
	return reflect.DeepEqual(c, o)
}

// String renders the config for debug logs. Chart values are shown only as
// their size and top-level keys, because they may hold secrets.
func (c Config) String() string {
	return fmt.Sprintf("%s=%s %s=%s %s=%d %s=%t %s=%s %s=%s %s=%s %s=%t %s=%q kubevip={%s} kubevipCloudProvider={%s}",
		KeyLogLevel, c.LogLevel,
		KeyOperateGuestClusterInterval, c.OperateGuestClusterInterval,
		KeyMetricsPort, c.MetricsPort,
		KeyTraceIPAMData, c.TraceIPAMData,
		KeyAddressRetention, c.AddressRetention,
		KeyServedAddressHold, c.ServedAddressHold,
		KeyKubevipGuestInstall, c.KubevipGuestInstall,
		KeyKubevipUpdate, c.KubevipUpdate,
		KeyKubevipNamespace, c.KubevipNamespace,
		c.Kubevip, c.KubevipCloudProvider)
}

// String renders the chart without its values; see Config.String.
func (ch Chart) String() string {
	keys := slices.Sorted(maps.Keys(ch.Values))
	return fmt.Sprintf("releaseName=%q repoUrl=%q ref=%q version=%q values=<%d bytes, keys %q>",
		ch.ReleaseName, redactURL(ch.RepoURL), redactURL(ch.Ref), ch.Version,
		len(ch.ValuesYAML), strings.Join(keys, ","))
}
