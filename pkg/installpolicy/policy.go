package installpolicy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// Chart is one of the two charts the operator installs into guest clusters, by its upstream name.
type Chart string

const (
	// Kubevip is kube-vip's chart: a DaemonSet on the control-plane nodes, host-networked with
	// NET_ADMIN and NET_RAW.
	Kubevip Chart = "kube-vip"
	// CloudProvider is kube-vip-cloud-provider's chart: an unprivileged Deployment.
	CloudProvider Chart = "kube-vip-cloud-provider"
)

// The reasons of a refusal, as the Events and the KubevipInstalled condition show them.
const (
	ReasonSourceNotAllowed = v1.ReasonChartSourceNotAllowed
	ReasonValuesNotAllowed = v1.ReasonChartValuesNotAllowed
	ReasonChartRefused     = v1.ReasonChartRefused
	ReasonRenderRefused    = v1.ReasonRenderRefused
	ReasonKubevipRefused   = v1.ReasonKubevipRefused
)

// Refusal is something the policy does not allow. Key names the kube-fip-config key it comes
// from, when it comes from one; the message never holds credentials or a value as written, only
// key paths, image repositories and the allowed forms.
type Refusal struct {
	problem.Problem
	Key string
}

func (r *Refusal) Error() string {
	if r.Key == "" {
		return r.Message
	}
	return fmt.Sprintf("kube-fip-config key %q: %s", r.Key, r.Message)
}

func refuse(reason, key, format string, args ...interface{}) *Refusal {
	return &Refusal{Key: key, Problem: *problem.New(reason, format, args...)}
}

// Settings are the deployment's allow-lists, from the operator's flags (chart values), which take
// more privilege to change than kube-fip-config.
type Settings struct {
	// ChartSources are http(s) repository URLs and oci:// prefixes.
	ChartSources []string
	// AllowHTTP allows plain http sources (and OCI registries on a loopback address).
	AllowHTTP bool
	// KubevipImages and CloudProviderImages are the exact image repositories (registry/path,
	// no tag) each chart's workload may run. With a Registry they are not read: the pinned
	// repositories under the registry are.
	KubevipImages       []string
	CloudProviderImages []string
	// Registry, when set, is where every guest image comes from (host[:port][/path]): Rancher's
	// system default registry, or the form's override. The allowed images are then exactly the
	// pinned ones under it (registry.go).
	Registry string
	// RequireDigest refuses every guest image not pinned by a digest (tag@sha256:...); the
	// operator then checks at the registry that the tag still names that digest.
	RequireDigest bool
	// PullSecret says the deployment has an image pull Secret for the guests: the charts' pods
	// name the operator's copy of it, GuestPullSecretName.
	PullSecret bool
	// KubevipModes are the kube-vip modes beyond ARP for Services whose variables a configuration
	// may set (see Modes).
	KubevipModes []string
	// Namespaces are the guest namespaces the releases may be installed into (none:
	// DefaultNamespaces): kube-vip runs there host-networked with NET_ADMIN, so whoever may edit
	// workloads there holds the node.
	Namespaces []string
	// ChartDigests are further chart archives, beyond the pinned ones, that may be loaded and
	// rendered: "<chart>@sha256:<hex>" each (pinned.go).
	ChartDigests []string
	// RenderCommand, when set, renders every chart in a process of its own, started with it (the
	// operator binary and its render-chart command), whose memory and time are bounded; empty
	// renders in the operator's process (render.go).
	RenderCommand []string
	// RenderBudget bounds every render; zero is DefaultRenderBudget.
	RenderBudget RenderBudget
}

// DefaultNamespaces are the guest namespaces the releases may go into by default: kube-system,
// where only the guest's administrators write, as the original operator installed them.
func DefaultNamespaces() []string { return []string{"kube-system"} }

// DefaultSettings allow the upstream kube-vip chart sources over https and the upstream images.
func DefaultSettings() Settings {
	return Settings{
		ChartSources:        DefaultChartSources(),
		KubevipImages:       DefaultKubevipImages(),
		CloudProviderImages: DefaultCloudProviderImages(),
		Namespaces:          DefaultNamespaces(),
	}
}

// Policy is what the deployment lets kube-fip-config install into guest clusters. The zero
// Policy allows nothing.
type Policy struct {
	sources   []source
	allowHTTP bool
	// downloads are where fetches from the upstream sources go on to (downloads.go).
	downloads []download
	images    map[Chart][]string
	// registry, requireDigest and pullSecret: see Settings.
	registry      string
	requireDigest bool
	pullSecret    bool
	modes         map[Mode]bool
	namespaces    []string
	// digests are the archives allowed beyond the pinned ones, by chart.
	digests map[Chart][]string
	// packages are the archives loaded last, and renders what the renders of charts may cost
	// and which charts overran it; shared by every copy of the Policy.
	packages *packageCache
	renders  *renderer
}

// New builds a Policy from the deployment's settings. Empty entries are skipped.
func New(s Settings) (Policy, error) {
	p := Policy{allowHTTP: s.AllowHTTP, downloads: upstreamDownloads(), images: map[Chart][]string{}, modes: map[Mode]bool{},
		requireDigest: s.RequireDigest, pullSecret: s.PullSecret,
		packages: &packageCache{}, renders: newRenderer(s.RenderCommand, s.RenderBudget)}
	registry, err := checkRegistry(s.Registry)
	if err != nil {
		return Policy{}, fmt.Errorf("guest image registry %q: %w", redact.Shorten(s.Registry, maxEcho), err)
	}
	p.registry = registry
	for _, raw := range s.KubevipModes {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		m, err := parseMode(raw)
		if err != nil {
			return Policy{}, err
		}
		p.modes[m] = true
	}
	for _, raw := range s.Namespaces {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		if len(validation.IsDNS1123Label(raw)) > 0 {
			return Policy{}, fmt.Errorf("allowed guest namespace %q is not a namespace name", redact.Shorten(raw, maxEcho))
		}
		p.namespaces = append(p.namespaces, raw)
	}
	if len(p.namespaces) == 0 {
		p.namespaces = DefaultNamespaces()
	}
	digests, err := parseDigests(s.ChartDigests)
	if err != nil {
		return Policy{}, err
	}
	p.digests = digests
	for _, raw := range s.ChartSources {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		src, err := parseSourceEntry(raw)
		if err != nil {
			return Policy{}, fmt.Errorf("allowed chart source %q: %w", redact.URL(raw), err)
		}
		if src.plainHTTP() && !s.AllowHTTP {
			return Policy{}, fmt.Errorf("allowed chart source %q is reached over plain http, which needs allow-http-chart-sources", src)
		}
		p.sources = append(p.sources, src)
	}
	if p.registry != "" {
		// The pinned repositories under the registry, and nothing else: no second list to edit.
		for _, chart := range []Chart{Kubevip, CloudProvider} {
			p.images[chart] = []string{UnderRegistry(p.registry, PinnedRepository(chart))}
		}
		return p, nil
	}
	for chart, list := range map[Chart][]string{Kubevip: s.KubevipImages, CloudProvider: s.CloudProviderImages} {
		for _, raw := range list {
			raw = strings.TrimSpace(raw)
			if raw == "" {
				continue
			}
			repo, err := exactRepository(raw)
			if err != nil {
				return Policy{}, fmt.Errorf("allowed %s image %q: %w", chart, redact.Shorten(raw, maxEcho), err)
			}
			p.images[chart] = append(p.images[chart], repo)
		}
	}
	return p, nil
}

// Default is the policy of DefaultSettings.
func Default() Policy {
	p, err := New(DefaultSettings())
	if err != nil {
		panic("installpolicy: the default settings do not parse: " + err.Error())
	}
	return p
}

// String lists the policy for the start-up log.
func (p Policy) String() string {
	sources := make([]string, len(p.sources))
	for i, s := range p.sources {
		sources[i] = s.String()
	}
	var modes []string
	for _, m := range Modes() {
		if p.modes[m] {
			modes = append(modes, string(m))
		}
	}
	return fmt.Sprintf("chart sources [%s], their download locations [%s], plain http %t, kube-vip images [%s], kube-vip-cloud-provider images [%s], %s, "+
		"chart archives: the pinned ones and [%s], kube-vip modes beyond ARP for Services [%s], guest namespaces [%s]",
		strings.Join(sources, " "), p.downloadsText(), p.allowHTTP,
		strings.Join(p.images[Kubevip], " "), strings.Join(p.images[CloudProvider], " "), p.registryText(), p.digestsText(),
		strings.Join(modes, " "), strings.Join(p.namespaces, " "))
}

// parseMode reads one entry of the allowed kube-vip modes.
func parseMode(raw string) (Mode, error) {
	for _, m := range Modes() {
		if strings.EqualFold(raw, string(m)) {
			return m, nil
		}
	}
	names := make([]string, 0, len(Modes()))
	for _, m := range Modes() {
		names = append(names, string(m))
	}
	return "", fmt.Errorf("allowed kube-vip mode %q is not one of %s", redact.Shorten(raw, maxEcho), strings.Join(names, ", "))
}

// checkNamespace refuses a release namespace the deployment does not allow.
func (p Policy) checkNamespace(key, namespace string) error {
	for _, ns := range p.namespaces {
		if ns == namespace {
			return nil
		}
	}
	allowed := strings.Join(p.namespaces, ", ")
	if allowed == "" {
		allowed = "none"
	}
	return refuse(ReasonValuesNotAllowed, key, "the releases may go only into the guest namespaces the deployment allows (%s), not %s: "+
		"kube-vip runs there on the host's network with NET_ADMIN, so whoever edits workloads in that namespace would hold every control-plane node", allowed, shorten(namespace))
}

// Renders says where and within which budget charts are rendered, for the start-up log.
func (p Policy) Renders() string {
	return p.renders.String()
}

// maxEcho bounds how much of a refused entry a message repeats.
const maxEcho = 100
