package chartsource

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// DefaultChartSources are the upstream kube-vip chart sources: the repository the original
// operator used, the address it is published at, and kube-vip's OCI namespace.
func DefaultChartSources() []string {
	return []string{
		"https://kube-vip.io/helm-charts",
		"https://kube-vip.github.io/helm-charts",
		"oci://ghcr.io/kube-vip",
	}
}

// Sources are the chart repositories and OCI registries the deployment allows. The zero Sources
// allow nothing.
type Sources struct {
	sources   []source
	allowHTTP bool
	// downloads are where fetches from the upstream sources go on to (downloads.go).
	downloads []download
}

// New reads the deployment's allowed chart sources: http(s) repository URLs and oci:// prefixes.
// Plain http (and OCI registries on a loopback address) need allowHTTP. Empty entries are skipped.
func New(entries []string, allowHTTP bool) (Sources, error) {
	s := Sources{allowHTTP: allowHTTP, downloads: upstreamDownloads()}
	for _, raw := range entries {
		if raw = strings.TrimSpace(raw); raw == "" {
			continue
		}
		src, err := parseSourceEntry(raw)
		if err != nil {
			return Sources{}, fmt.Errorf("allowed chart source %q: %w", redact.URL(raw), err)
		}
		if src.plainHTTP() && !allowHTTP {
			return Sources{}, fmt.Errorf("allowed chart source %q is reached over plain http, which needs allow-http-chart-sources", src)
		}
		s.sources = append(s.sources, src)
	}
	return s, nil
}

// String lists the sources for the start-up log.
func (s Sources) String() string {
	list := make([]string, len(s.sources))
	for i, src := range s.sources {
		list[i] = src.String()
	}
	return fmt.Sprintf("chart sources [%s], their download locations [%s], plain http %t", strings.Join(list, " "), s.downloadsText(), s.allowHTTP)
}

// source is one allow-list entry. port is "" for the scheme's default port and "*" for any.
type source struct {
	scheme, host, port, path string
}

func (s source) String() string {
	hostport := s.host
	if s.port != "" {
		hostport += ":" + s.port
	}
	return s.scheme + "://" + hostport + s.path
}

func parseSourceEntry(raw string) (source, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	scheme = strings.ToLower(scheme)
	if !ok || (scheme != "http" && scheme != "https" && scheme != "oci") {
		return source{}, errors.New("must start with https://, http:// or oci://")
	}
	hostport, p, _ := strings.Cut(rest, "/")
	if strings.ContainsAny(hostport, "@?#") || strings.ContainsAny(p, "?#") {
		return source{}, errors.New("must hold no credentials, query or fragment")
	}
	host, port := hostport, ""
	if h, pt, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, pt
		if _, err := strconv.ParseUint(port, 10, 16); port != "*" && err != nil {
			return source{}, errors.New("the port must be a number or *")
		}
	}
	if host == "" || strings.ContainsAny(host, " :*") {
		return source{}, errors.New("must name a host")
	}
	return source{scheme: scheme, host: strings.ToLower(host), port: port, path: cleanPath("/" + p)}, nil
}

// cleanPath resolves dot segments, so that a/../b cannot climb out of an allowed path, and drops
// a trailing slash.
func cleanPath(p string) string {
	c := path.Clean("/" + p)
	if c == "/" {
		return ""
	}
	return c
}

// plainHTTP: http repositories, and OCI registries on a loopback host, which the installer
// reaches over plain http.
func (s source) plainHTTP() bool {
	return s.scheme == "http" || (s.scheme == "oci" && Loopback(s.host))
}

// Loopback reports whether host, a name or an address (bracketed or not), is this machine's:
// localhost, 127.0.0.0/8 or ::1.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// portOf is port, or scheme's default port when port is "" (443 for https and oci, 80 for http).
func portOf(scheme, port string) string {
	if port != "" {
		return port
	}
	switch strings.ToLower(scheme) {
	case "http":
		return "80"
	case "https", "oci":
		return "443"
	}
	return ""
}

// SameOrigin reports whether URLs a and b name the same scheme, host and port, a port left out
// being the scheme's default. Credentials bound to one of them may go to the other.
func SameOrigin(a, b *url.URL) bool {
	return a != nil && b != nil && a.Hostname() != "" && strings.EqualFold(a.Scheme, b.Scheme) &&
		strings.EqualFold(a.Hostname(), b.Hostname()) && portOf(a.Scheme, a.Port()) == portOf(b.Scheme, b.Port())
}

func (s source) allows(t source) bool {
	if s.scheme != t.scheme || s.host != t.host {
		return false
	}
	if s.port != "*" && portOf(s.scheme, s.port) != portOf(t.scheme, t.port) {
		return false
	}
	return s.path == "" || t.path == s.path || strings.HasPrefix(t.path, s.path+"/")
}

// sourceOf is u as an allow-list entry would name it.
func sourceOf(u *url.URL) source {
	return source{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Hostname()), port: u.Port(), path: cleanPath(u.Path)}
}

// allows reports whether an allowed chart source holds t.
func (ss Sources) allows(t source) bool {
	return slices.ContainsFunc(ss.sources, func(s source) bool { return s.allows(t) })
}

// Check checks a chart source as kube-fip-config names it under key: a repository URL or an
// oci:// reference. It returns nil or a *guestchart.Refusal.
func (ss Sources) Check(key, raw string) error {
	deny := func(format string, args ...interface{}) error {
		return guestchart.Refuse(guestchart.ReasonSourceNotAllowed, key, format, args...)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return deny("the chart source is not a valid URL")
	}
	shown := redact.URL(guestchart.Shorten(raw))
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return deny("chart source %s must not hold credentials, a query or a fragment; "+
			"credentials come from the Secret named by the deployment", shown)
	}
	t := sourceOf(u)
	if t.plainHTTP() && !ss.allowHTTP {
		return deny("chart source %s is reached over plain http, which this deployment does not allow "+
			"(allow-http-chart-sources)", shown)
	}
	if ss.allows(t) {
		return nil
	}
	return deny("chart source %s is not in the deployment's allowed chart sources (allowed-chart-sources)", shown)
}
