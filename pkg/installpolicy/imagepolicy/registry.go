package imagepolicy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// GuestPullSecretName is the Secret the operator writes into the release namespace of every guest,
// a copy of the deployment's image pull Secret, and names in both charts' imagePullSecrets. The
// name is the product's, so that no value chooses which Secret of the guest the operator writes.
const GuestPullSecretName = "kube-fip-operator-registry"

// PinnedRepository is the repository of the pinned image of chart, as a container runtime
// resolves it (ghcr.io/kube-vip/kube-vip-cloud-provider).
func PinnedRepository(chart guestchart.Chart) string {
	if chart == guestchart.Kubevip {
		return normalizeImage(config.DefaultKubevipImageRepository)
	}
	return normalizeImage(config.DefaultKubevipCloudProviderImageRepository)
}

// UnderRegistry is repo as mirrored into registry: the registry, then repo's path without its
// registry host (docker.io/kubevip/kube-vip-cloud-provider → <registry>/kubevip/kube-vip-cloud-provider).
func UnderRegistry(registry, repo string) string {
	_, path, _ := strings.Cut(normalizeImage(repo), "/")
	return registry + "/" + path
}

// checkRegistry reads the deployment's registry: a host (a name with a dot or a port, or
// localhost) and optionally a path under it, as Rancher's systemDefaultRegistry takes it, without
// a scheme or a trailing slash.
func checkRegistry(raw string) (string, error) {
	reg := strings.TrimSpace(raw)
	if reg == "" {
		return "", nil
	}
	if strings.Contains(reg, "://") {
		return "", errors.New("must be a registry host such as registry.example.com:5000, without http:// or https://")
	}
	reg = strings.TrimSuffix(reg, "/")
	host, _, _ := strings.Cut(reg, "/")
	if !strings.ContainsAny(host, ".:") && host != "localhost" {
		return "", errors.New("must start with a registry host: a name with a dot or a port, or localhost")
	}
	if !imageRepository.MatchString(reg+"/kube-vip/kube-vip") || strings.ToLower(host) != host {
		return "", errors.New("must be a registry host in lower case, optionally with a port and a path, such as registry.example.com:5000 or registry.example.com/mirror")
	}
	return reg, nil
}

// Registry is the registry every guest image comes from, or "" for the upstream registries.
func (p Policy) Registry() string { return p.registry }

// RequireDigest says whether every guest image must be pinned by a digest, which the operator then
// checks at the registry before anything reaches a guest.
func (p Policy) RequireDigest() bool { return p.requireDigest }

// PullSecret says whether the guests' pods pull with the operator's copy of the deployment's pull
// Secret (GuestPullSecretName).
func (p Policy) PullSecret() bool { return p.pullSecret }

// WithoutDigests is p without the requirement of digests: for the product's own defaults.
func (p Policy) WithoutDigests() Policy {
	p.requireDigest = false
	return p
}

// AtRegistry moves the image the values ask for under the deployment's registry: the repository
// of the chart's pinned image, or none (the chart's default, the same repository), becomes the
// pinned one under the registry. Any other repository stays as written, for the allow-list to
// judge: an image of another registry is named under this one by whoever writes the values.
func (p Policy) AtRegistry(chart guestchart.Chart, img *Value) *Value {
	if p.registry == "" {
		return img
	}
	out := Value{}
	if img != nil {
		out = *img
	}
	if out.Repository == "" || (imageRepository.MatchString(out.Repository) && normalizeImage(out.Repository) == PinnedRepository(chart)) {
		out.Repository = UnderRegistry(p.registry, PinnedRepository(chart))
	}
	return &out
}

// WithPullSecret adds the operator's pull Secret to the pods' imagePullSecrets, when the
// deployment has one.
func (p Policy) WithPullSecret(refs []corev1.LocalObjectReference) []corev1.LocalObjectReference {
	ours := corev1.LocalObjectReference{Name: GuestPullSecretName}
	if !p.pullSecret || slices.Contains(refs, ours) {
		return refs
	}
	return append(refs, ours)
}

// String says which images the guests may run, for the start-up log.
func (p Policy) String() string {
	from := "their upstream registries"
	if p.registry != "" {
		from = "registry " + p.registry + " (the pinned repositories under it only)"
	}
	digests := "not required"
	if p.requireDigest {
		digests = "required, checked at the registry"
	}
	pull := "none"
	if p.pullSecret {
		pull = GuestPullSecretName + " in the release namespace"
	}
	return fmt.Sprintf("kube-vip images [%s], kube-vip-cloud-provider images [%s], guest images from %s, digests %s, pull Secret %s",
		strings.Join(p.repos[guestchart.Kubevip], " "), strings.Join(p.repos[guestchart.CloudProvider], " "), from, digests, pull)
}
