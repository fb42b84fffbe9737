package imagepolicy

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/kubevipenv"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// Image reference grammar, after the distribution reference format. They are compiled once and
// only ever read.
var (
	// imageRepository is a repository without tag or digest: an optional registry host (with a
	// dot or a port, or localhost) and lower-case path components.
	imageRepository = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?)/)?` +
		`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
	// imageDigest pins a tag to one manifest.
	imageDigest = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

// Policy is the images the deployment lets the charts' workloads run. The zero Policy allows none.
type Policy struct {
	repos map[guestchart.Chart][]string
	// registry, requireDigest and pullSecret: see New.
	registry      string
	requireDigest bool
	pullSecret    bool
}

// New reads the deployment's allowed image repositories of each chart (registry/path, no tag).
// registry, when set, is where every guest image comes from (host[:port][/path]), and the allowed
// images are then exactly the pinned ones under it, whatever allowed says. requireDigest refuses
// every image not pinned by a digest; pullSecret says the guests' pods pull with
// GuestPullSecretName. Empty entries are skipped.
func New(allowed map[guestchart.Chart][]string, registry string, requireDigest, pullSecret bool) (Policy, error) {
	p := Policy{repos: map[guestchart.Chart][]string{}, requireDigest: requireDigest, pullSecret: pullSecret}
	reg, err := checkRegistry(registry)
	if err != nil {
		return Policy{}, fmt.Errorf("guest image registry %q: %w", guestchart.Shorten(registry), err)
	}
	p.registry = reg
	for _, chart := range guestchart.Charts() {
		if reg != "" {
			// The pinned repositories under the registry, and nothing else: no second list to edit.
			p.repos[chart] = []string{UnderRegistry(reg, PinnedRepository(chart))}
			continue
		}
		for _, raw := range allowed[chart] {
			if raw = strings.TrimSpace(raw); raw == "" {
				continue
			}
			if !imageRepository.MatchString(raw) {
				return Policy{}, fmt.Errorf("allowed %s image %q: must be an image repository (registry/path, without tag), such as ghcr.io/kube-vip/kube-vip", chart, guestchart.Shorten(raw))
			}
			p.repos[chart] = append(p.repos[chart], normalizeImage(raw))
		}
	}
	return p, nil
}

// DefaultKubevipImages are the repositories kube-vip publishes its image to: ghcr.io, and the
// Docker Hub repository the original operator's default named (plndr/kube-vip). Variants such as
// kube-vip-iptables are other repositories, and not allowed unless the deployment names them.
func DefaultKubevipImages() []string {
	return []string{"ghcr.io/kube-vip/kube-vip", "docker.io/plndr/kube-vip"}
}

// DefaultCloudProviderImages are the repositories kube-vip-cloud-provider is published to.
func DefaultCloudProviderImages() []string {
	return []string{"docker.io/kubevip/kube-vip-cloud-provider", "ghcr.io/kube-vip/kube-vip-cloud-provider"}
}

// normalizeImage writes a repository the way a container runtime resolves it: a first component
// without a dot or a port (and not localhost) is a Docker Hub organisation, and a single
// component is a Docker Hub official image. The registry is kept as spelled: an allowed
// repository matches only its exact spelling, never a case variant of its host.
func normalizeImage(repo string) string {
	first, rest, found := strings.Cut(repo, "/")
	if !found {
		return "docker.io/library/" + repo
	}
	if !strings.ContainsAny(first, ".:") && first != "localhost" {
		return "docker.io/" + repo
	}
	if first == "index.docker.io" || first == "registry-1.docker.io" {
		first = "docker.io"
	}
	return first + "/" + rest
}

// allowed reports whether repo, as a chart renders or values name it, is exactly one of the
// chart's allowed repositories.
func (p Policy) allowed(chart guestchart.Chart, repo string) bool {
	return imageRepository.MatchString(repo) && slices.Contains(p.repos[chart], normalizeImage(repo))
}

// allowedText lists the chart's allowed repositories for a message.
func (p Policy) allowedText(chart guestchart.Chart) string {
	if len(p.repos[chart]) == 0 {
		return "none"
	}
	return strings.Join(p.repos[chart], ", ")
}

// checkTag checks an image tag as values give it or a chart renders it: a release of the chart's
// workload (for kube-vip, of a generation whose configuration the operator knows), optionally
// pinned by a digest ("v1.0.0@sha256:...").
func checkTag(chart guestchart.Chart, tag string) error {
	version, digest, pinned := strings.Cut(tag, "@")
	if pinned && !imageDigest.MatchString(digest) {
		return fmt.Errorf("the digest after @ must be sha256:<64 hex digits>")
	}
	v, err := semver.StrictNewVersion(strings.TrimPrefix(version, "v"))
	if err != nil || !strings.HasPrefix(version, "v") {
		return fmt.Errorf("must be a release tag such as v1.0.0")
	}
	if chart == guestchart.Kubevip {
		if _, ok := kubevipenv.GenerationOf(v); !ok {
			return fmt.Errorf("kube-vip %s is older than %s, the oldest release whose configuration the operator knows",
				version, kubevipenv.Generations()[0].From.Original())
		}
	}
	return nil
}

// CheckRendered checks a full image reference a chart rendered into the workload of chart.
func (p Policy) CheckRendered(chart guestchart.Chart, ref string) error {
	repo, tag, digest := guestchart.SplitImage(ref)
	if !p.allowed(chart, repo) {
		return fmt.Errorf("image repository %q is not one of the deployment's allowed %s images (%s)",
			guestchart.Shorten(repo), chart, p.allowedText(chart))
	}
	if tag == "" {
		return fmt.Errorf("image %q has no tag", guestchart.Shorten(ref))
	}
	if digest != "" {
		tag += "@" + digest
	}
	if err := checkTag(chart, tag); err != nil {
		return fmt.Errorf("image %q: the tag %w", guestchart.Shorten(ref), err)
	}
	return p.pinned(fmt.Sprintf("image %q", guestchart.Shorten(ref)), tag)
}

// Value is the image key both charts' values read.
type Value struct {
	Repository string `json:"repository,omitempty"`
	Tag        string `json:"tag,omitempty"`
	PullPolicy string `json:"pullPolicy,omitempty"`
}

// CheckValue checks the image key of chart's values, once moved under the registry (AtRegistry).
func (p Policy) CheckValue(chart guestchart.Chart, img *Value) error {
	if img == nil || img.Tag == "" {
		// The chart's default tag carries no digest.
		if err := p.pinned("image.tag", ""); err != nil {
			return err
		}
	}
	if img == nil {
		return nil
	}
	if img.Repository != "" && !p.allowed(chart, img.Repository) {
		return fmt.Errorf("image.repository %q is not one of the deployment's allowed %s images (%s)", guestchart.Shorten(img.Repository), chart, p.allowedText(chart))
	}
	if img.Tag != "" {
		if err := checkTag(chart, img.Tag); err != nil {
			return fmt.Errorf("image.tag %w", err)
		}
		if err := p.pinned("image.tag", img.Tag); err != nil {
			return err
		}
	}
	if err := CheckPullPolicy(img.PullPolicy); err != nil {
		return fmt.Errorf("image.pullPolicy %w", err)
	}
	return nil
}

// CheckPullPolicy allows an image pull policy of Kubernetes, or none.
func CheckPullPolicy(policy string) error {
	switch policy {
	case "", "Always", "IfNotPresent", "Never":
		return nil
	}
	return errors.New("must be Always, IfNotPresent or Never")
}

// pinned refuses a tag without a digest when the deployment requires digests.
func (p Policy) pinned(what, tag string) error {
	if !p.requireDigest {
		return nil
	}
	if _, digest, ok := strings.Cut(tag, "@"); !ok || !imageDigest.MatchString(digest) {
		return fmt.Errorf("%s must be pinned by a digest, such as %s: the deployment requires digests (guestImages.requireDigest), "+
			"and the operator checks at the registry that the tag still names it", what, redact.Shorten(config.DefaultKubevipImageTag, guestchart.MaxEcho))
	}
	return nil
}
