package installpolicy

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
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

// exactRepository checks one entry of an allowed image list: a repository, without tag or digest.
func exactRepository(raw string) (string, error) {
	if !imageRepository.MatchString(raw) {
		return "", errors.New("must be an image repository (registry/path, without tag), such as ghcr.io/kube-vip/kube-vip")
	}
	return normalizeImage(raw), nil
}

// imageAllowed reports whether repo, as a chart renders or values name it, is exactly one of the
// chart's allowed repositories.
func (p Policy) imageAllowed(chart Chart, repo string) bool {
	if !imageRepository.MatchString(repo) {
		return false
	}
	n := normalizeImage(repo)
	for _, allowed := range p.images[chart] {
		if n == allowed {
			return true
		}
	}
	return false
}

// allowedImages lists the chart's allowed repositories for a message.
func (p Policy) allowedImages(chart Chart) string {
	if len(p.images[chart]) == 0 {
		return "none"
	}
	return strings.Join(p.images[chart], ", ")
}

// splitImage splits a full image reference, as a pod spec holds it, into repository, tag and
// digest. A reference without a tag has tag "".
func splitImage(ref string) (repo, tag, digest string) {
	name, digest, _ := strings.Cut(ref, "@")
	repo = name
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		repo, tag = name[:i], name[i+1:]
	}
	return repo, tag, digest
}

// checkTag checks an image tag as values give it or a chart renders it: a release of the chart's
// workload (for kube-vip, of a generation whose configuration the operator knows), optionally
// pinned by a digest ("v1.0.0@sha256:...").
func checkTag(chart Chart, tag string) error {
	version, digest, pinned := strings.Cut(tag, "@")
	if pinned && !imageDigest.MatchString(digest) {
		return fmt.Errorf("the digest after @ must be sha256:<64 hex digits>")
	}
	v, err := semver.StrictNewVersion(strings.TrimPrefix(version, "v"))
	if err != nil || !strings.HasPrefix(version, "v") {
		return fmt.Errorf("must be a release tag such as v1.0.0")
	}
	if chart == Kubevip {
		if _, ok := GenerationOf(v); !ok {
			return fmt.Errorf("kube-vip %s is older than %s, the oldest release whose configuration the operator knows",
				version, Generations()[0].From.Original())
		}
	}
	return nil
}

// checkImage checks a full image reference a chart rendered into the workload of chart.
func (p Policy) checkImage(chart Chart, ref string) error {
	repo, tag, digest := splitImage(ref)
	if !p.imageAllowed(chart, repo) {
		return fmt.Errorf("image repository %q is not one of the deployment's allowed %s images (%s)",
			shorten(repo), chart, p.allowedImages(chart))
	}
	if tag == "" {
		return fmt.Errorf("image %q has no tag", shorten(ref))
	}
	if digest != "" {
		tag += "@" + digest
	}
	if err := checkTag(chart, tag); err != nil {
		return fmt.Errorf("image %q: the tag %w", shorten(ref), err)
	}
	return p.pinned(fmt.Sprintf("image %q", shorten(ref)), tag)
}
