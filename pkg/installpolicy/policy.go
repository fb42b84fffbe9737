package installpolicy

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartsource"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/render"
)

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
	// system default registry, or the form's override.
	Registry string
	// RequireDigest refuses every guest image not pinned by a digest (tag@sha256:...); the
	// operator then checks at the registry that the tag still names that digest.
	RequireDigest bool
	// PullSecret says the deployment has an image pull Secret for the guests: the charts' pods
	// name the operator's copy of it, imagepolicy.GuestPullSecretName.
	PullSecret bool
	// KubevipModes are the kube-vip modes beyond ARP for Services whose variables a configuration
	// may set (see chartvalues.Modes).
	KubevipModes []string
	// Namespaces are the guest namespaces the releases may be installed into (none:
	// DefaultNamespaces): kube-vip runs there host-networked with NET_ADMIN, so whoever may edit
	// workloads there holds the node.
	Namespaces []string
	// ChartDigests are further chart archives, beyond the pinned ones, that may be loaded and
	// rendered: "<chart>@sha256:<hex>" each.
	ChartDigests []string
	// RenderCommand, when set, renders every chart in a process of its own, started with it (the
	// operator binary and its render-chart command); empty renders in the operator's process.
	RenderCommand []string
	// RenderBudget bounds every render; zero is render.DefaultBudget.
	RenderBudget render.Budget
}

// DefaultNamespaces are the guest namespaces the releases may go into by default: kube-system,
// where only the guest's administrators write, as the original operator installed them.
func DefaultNamespaces() []string { return []string{"kube-system"} }

// DefaultSettings allow the upstream kube-vip chart sources over https and the upstream images.
func DefaultSettings() Settings {
	return Settings{
		ChartSources:        chartsource.DefaultChartSources(),
		KubevipImages:       imagepolicy.DefaultKubevipImages(),
		CloudProviderImages: imagepolicy.DefaultCloudProviderImages(),
		Namespaces:          DefaultNamespaces(),
	}
}

// Policy is what the deployment lets kube-fip-config install into guest clusters. The zero
// Policy allows nothing.
type Policy struct {
	sources    chartsource.Sources
	values     chartvalues.Schema
	namespaces []string
	archives   chartarchive.Archives
	// renders are what the renders of charts may cost and which overran it; shared by every copy.
	renders *render.Renderer
}

// New builds a Policy from the deployment's settings. Empty entries are skipped.
func New(s Settings) (Policy, error) {
	var p Policy
	var err error
	allowed := map[guestchart.Chart][]string{guestchart.Kubevip: s.KubevipImages, guestchart.CloudProvider: s.CloudProviderImages}
	if p.values.Images, err = imagepolicy.New(allowed, s.Registry, s.RequireDigest, s.PullSecret); err != nil {
		return Policy{}, err
	}
	if p.values.Modes, err = chartvalues.ParseModes(s.KubevipModes); err != nil {
		return Policy{}, err
	}
	for _, raw := range s.Namespaces {
		if raw = strings.TrimSpace(raw); raw == "" {
			continue
		}
		if len(validation.IsDNS1123Label(raw)) > 0 {
			return Policy{}, fmt.Errorf("allowed guest namespace %q is not a namespace name", guestchart.Shorten(raw))
		}
		p.namespaces = append(p.namespaces, raw)
	}
	if len(p.namespaces) == 0 {
		p.namespaces = DefaultNamespaces()
	}
	if p.archives, err = chartarchive.New(s.ChartDigests); err != nil {
		return Policy{}, err
	}
	if p.sources, err = chartsource.New(s.ChartSources, s.AllowHTTP); err != nil {
		return Policy{}, err
	}
	p.renders = render.New(s.RenderCommand, s.RenderBudget)
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
	var modes []string
	for _, m := range chartvalues.Modes() {
		if p.values.Modes[m] {
			modes = append(modes, string(m))
		}
	}
	return fmt.Sprintf("%s, %s, %s, kube-vip modes beyond ARP for Services [%s], guest namespaces [%s]",
		p.sources, p.values.Images, p.archives, strings.Join(modes, " "), strings.Join(p.namespaces, " "))
}

// Sources are the chart sources the deployment allows: the guest fetcher's helminstall.Sources.
func (p Policy) Sources() chartsource.Sources { return p.sources }

// Images are the images the guests may run.
func (p Policy) Images() imagepolicy.Policy { return p.values.Images }

// Archives are the chart archives the deployment trusts.
func (p Policy) Archives() chartarchive.Archives { return p.archives }

// Renders says where and within which budget charts are rendered, for the start-up log.
func (p Policy) Renders() string { return p.renders.String() }

// checkNamespace refuses a release namespace the deployment does not allow.
func (p Policy) checkNamespace(key, namespace string) error {
	if slices.Contains(p.namespaces, namespace) {
		return nil
	}
	allowed := strings.Join(p.namespaces, ", ")
	if allowed == "" {
		allowed = "none"
	}
	return guestchart.Refuse(guestchart.ReasonValuesNotAllowed, key, "the releases may go only into the guest namespaces the deployment allows (%s), not %s: "+
		"kube-vip runs there on the host's network with NET_ADMIN, so whoever edits workloads in that namespace would hold every control-plane node", allowed, guestchart.Shorten(namespace))
}
