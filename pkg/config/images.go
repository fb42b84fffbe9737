package config

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// Image reference grammar, after the distribution reference format. They are compiled once and
// only ever read.
var (
	// imageRepository is a repository without tag or digest: an optional registry host (with a
	// dot or a port, or localhost) and lower-case path components.
	imageRepository = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?)/)?` +
		`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
	// imageTag is a tag, optionally pinned by a digest.
	imageTag = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}(?:@sha256:[a-f0-9]{64})?$`)
)

// normalizeImage writes a repository the way a container runtime resolves it: a first component
// without a dot or a port (and not localhost) is a Docker Hub organisation, and a single
// component is a Docker Hub official image.
func normalizeImage(repo string) string {
	first, rest, found := strings.Cut(repo, "/")
	if !found {
		return "docker.io/library/" + repo
	}
	if !strings.ContainsAny(first, ".:") && first != "localhost" {
		return "docker.io/" + repo
	}
	first = strings.ToLower(first)
	if first == "index.docker.io" || first == "registry-1.docker.io" {
		first = "docker.io"
	}
	return first + "/" + rest
}

// imageAllowed reports whether repo is one of the allowed prefixes or below one.
func (p Policy) imageAllowed(repo string) bool {
	n := normalizeImage(repo)
	for _, prefix := range p.images {
		if n == prefix || strings.HasPrefix(n, prefix+"/") {
			return true
		}
	}
	return false
}

// imageProblem checks one "image" entry of chart values: a mapping of repository, tag and
// pullPolicy (what the kube-vip charts read), or a full reference. Other image keys are refused,
// since they could name a registry the prefixes do not cover.
func (p Policy) imageProblem(at string, v interface{}) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		repo, tag := splitImageRef(t)
		if !imageRepository.MatchString(repo) || (tag != "" && !imageTag.MatchString(tag)) {
			return fmt.Sprintf("%s is not an image reference", at)
		}
		if !p.imageAllowed(repo) {
			return fmt.Sprintf("%s %s is not under the deployment's allowed image prefixes (allowed-image-prefixes)", at, redact.Shorten(repo, maxEcho))
		}
		return ""
	case map[string]interface{}:
		for _, k := range sortedKeys(t) {
			switch k {
			case "repository":
				repo, ok := t[k].(string)
				if !ok || !imageRepository.MatchString(repo) {
					return fmt.Sprintf("%s.repository is not an image repository (without tag)", at)
				}
				if !p.imageAllowed(repo) {
					return fmt.Sprintf("%s.repository %s is not under the deployment's allowed image prefixes (allowed-image-prefixes)", at, repo)
				}
			case "tag":
				if t[k] == nil {
					continue
				}
				tag := strings.TrimSpace(fmt.Sprint(t[k]))
				if tag != "" && !imageTag.MatchString(tag) {
					return fmt.Sprintf("%s.tag is not an image tag", at)
				}
			case "pullPolicy":
			default:
				return fmt.Sprintf("%s.%s is not allowed in chart values: only repository, tag and pullPolicy", at, redact.Shorten(k, maxEcho))
			}
		}
		return ""
	default:
		return fmt.Sprintf("%s must be a mapping of repository, tag and pullPolicy", at)
	}
}

// splitImageRef splits a full image reference into repository and tag (with any digest).
func splitImageRef(ref string) (repo, tag string) {
	name, digest, hasDigest := strings.Cut(ref, "@")
	repo = name
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		repo, tag = name[:i], name[i+1:]
	}
	if hasDigest {
		if tag == "" {
			tag = "latest"
		}
		tag += "@" + digest
	}
	return repo, tag
}

func sortedKeys(m map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ImageAllowed reports whether a full image reference, as a chart renders it into a pod, is under
// one of the allowed prefixes.
func (p Policy) ImageAllowed(image string) bool {
	repo, tag := splitImageRef(image)
	return imageRepository.MatchString(repo) && (tag == "" || imageTag.MatchString(tag)) && p.imageAllowed(repo)
}
