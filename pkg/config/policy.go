package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strings"

	"github.com/kubefip/kube-fip-operator/pkg/problem"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// The kinds of a chart the Policy refuses. They are also the reasons of the Events and of the
// KubevipInstalled condition that report the refusal.
const (
	// ProblemChartSourceNotAllowed: the chart repository or OCI reference is not in the
	// deployment's allow-list, or uses plain http where the deployment allows only https.
	ProblemChartSourceNotAllowed = "ChartSourceNotAllowed"
	// ProblemChartValuesNotAllowed: the chart values change the image to one outside the allowed
	// image prefixes, or set a key that adds privileges.
	ProblemChartValuesNotAllowed = "ChartValuesNotAllowed"
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

// DefaultImagePrefixes are where the upstream kube-vip images live: ghcr.io, and the Docker Hub
// organisations of the defaults (plndr/kube-vip, kubevip/kube-vip-cloud-provider).
func DefaultImagePrefixes() []string {
	return []string{"ghcr.io/kube-vip", "docker.io/plndr", "docker.io/kubevip"}
}

// deniedValueKeys are chart value keys that add privileges to, or mount host paths into, a
// workload that already runs host-networked with NET_ADMIN on every control-plane node. They are
// refused wherever they appear in the values; the charts' own defaults apply.
func deniedValueKeys() []string {
	return []string{
		"securityContext", "podSecurityContext", "containerSecurityContext",
		"volumes", "volumeMounts", "extraVolumes", "extraVolumeMounts", "hostAliases",
		"hostNetwork", "hostPID", "hostIPC", "privileged", "capabilities",
		"initContainers", "extraContainers", "sidecars",
	}
}

// Policy is what the deployment lets kube-fip-config install into guest clusters: from which chart
// sources, over which transport, and with which images. It comes from command-line flags (chart
// values), which take more privilege to change than the ConfigMap, so that whoever may edit
// kube-fip-config cannot choose the code that runs as cluster-owner in every guest. The zero
// Policy allows nothing.
type Policy struct {
	sources   []source
	images    []string
	allowHTTP bool
	// downloads are where fetches from the upstream sources go on to (downloads.go).
	downloads []download
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

// NewPolicy builds a Policy from the allowed chart sources (http(s) repository URLs and oci://
// prefixes), whether plain http is allowed, and the allowed image prefixes (registry/path).
// Empty entries are skipped. A source matches an entry when scheme and host are the same, the
// port is the same (none: the scheme's default; "*": any), and its path is the entry's path or
// below it.
func NewPolicy(sources []string, allowHTTP bool, imagePrefixes []string) (Policy, error) {
	p := Policy{allowHTTP: allowHTTP, downloads: upstreamDownloads()}
	for _, raw := range sources {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		s, err := parseSourceEntry(raw)
		if err != nil {
			return Policy{}, fmt.Errorf("allowed chart source %q: %w", redactURL(raw), err)
		}
		if s.plainHTTP() && !allowHTTP {
			return Policy{}, fmt.Errorf("allowed chart source %q is reached over plain http, which needs allow-http-chart-sources", s)
		}
		p.sources = append(p.sources, s)
	}
	for _, raw := range imagePrefixes {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		if !imageRepository.MatchString(raw) {
			return Policy{}, fmt.Errorf("allowed image prefix %q: must be a registry and path such as ghcr.io/kube-vip", redact.Shorten(raw, maxEcho))
		}
		p.images = append(p.images, normalizeImage(raw))
	}
	return p, nil
}

// DefaultPolicy allows the upstream kube-vip sources over https and the upstream images.
func DefaultPolicy() Policy {
	p, err := NewPolicy(DefaultChartSources(), false, DefaultImagePrefixes())
	if err != nil {
		panic("config: the default chart policy does not parse: " + err.Error())
	}
	return p
}

// String lists the policy for the start-up log.
func (p Policy) String() string {
	sources := make([]string, len(p.sources))
	for i, s := range p.sources {
		sources[i] = s.String()
	}
	return fmt.Sprintf("chart sources [%s], their download locations [%s], plain http %t, image prefixes [%s]",
		strings.Join(sources, " "), p.downloadsText(), p.allowHTTP, strings.Join(p.images, " "))
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
		if port != "*" && !isPort(port) {
			return source{}, errors.New("the port must be a number or *")
		}
	}
	if host == "" || strings.ContainsAny(host, " :*") {
		return source{}, errors.New("must name a host")
	}
	return source{scheme: scheme, host: strings.ToLower(host), port: port, path: cleanPath("/" + p)}, nil
}

func isPort(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
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
	return s.scheme == "http" || (s.scheme == "oci" && loopbackHost(s.host))
}

func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func defaultPort(scheme string) string {
	if scheme == "http" {
		return "80"
	}
	return "443"
}

func (s source) allows(t source) bool {
	if s.scheme != t.scheme || s.host != t.host {
		return false
	}
	if s.port != "*" {
		want, got := s.port, t.port
		if want == "" {
			want = defaultPort(s.scheme)
		}
		if got == "" {
			got = defaultPort(t.scheme)
		}
		if want != got {
			return false
		}
	}
	return s.path == "" || t.path == s.path || strings.HasPrefix(t.path, s.path+"/")
}

// allows reports whether an allowed chart source holds t.
func (p Policy) allows(t source) bool {
	for _, s := range p.sources {
		if s.allows(t) {
			return true
		}
	}
	return false
}

// Refusal is a chart the Policy does not allow. Its message names the ConfigMap key and never
// holds credentials.
type Refusal struct {
	problem.Problem
	Key string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("%s key %q: %s", ConfigMapName, r.Key, r.Message)
}

// chartKeys names the ConfigMap keys of one chart, for the messages.
type chartKeys struct{ repo, ref, values string }

// CheckKubevip checks the kube-vip chart of c; it returns nil or a *Refusal.
func (p Policy) CheckKubevip(c Config) error {
	return p.checkChart(c.Kubevip, chartKeys{KeyKubevipChartRepoURL, KeyKubevipChartRef, KeyKubevipChartValues})
}

// CheckKubevipCloudProvider checks the kube-vip-cloud-provider chart of c; it returns nil or a
// *Refusal.
func (p Policy) CheckKubevipCloudProvider(c Config) error {
	return p.checkChart(c.KubevipCloudProvider,
		chartKeys{KeyKubevipChartRepoURL, KeyKubevipCloudProviderChartRef, KeyKubevipCloudProviderChartValues})
}

// Check reports, as Problems with Warning set, every chart of c the Policy refuses. The values
// stay as they are in c: it is the install that is refused, until the ConfigMap or the
// deployment changes.
func (p Policy) Check(c Config) []Problem {
	var problems []Problem
	for _, err := range []error{p.CheckKubevip(c), p.CheckKubevipCloudProvider(c)} {
		var r *Refusal
		if errors.As(err, &r) {
			problems = append(problems, Problem{Key: r.Key, Warning: true, Problem: problem.Problem{
				Reason: r.Reason, Message: r.Message + "; nothing is installed from it until it is allowed"}})
		}
	}
	return problems
}

func (p Policy) checkChart(ch Chart, keys chartKeys) error {
	if err := p.checkSource(ch, keys); err != nil {
		return err
	}
	if msg := p.valuesProblem(ch.Values); msg != "" {
		return &Refusal{Key: keys.values, Problem: problem.Problem{Reason: ProblemChartValuesNotAllowed, Message: msg}}
	}
	return nil
}

func (p Policy) checkSource(ch Chart, keys chartKeys) error {
	key, raw := keys.repo, ch.RepoURL
	if ch.Ref != "" {
		key, raw = keys.ref, ch.Ref
	}
	refuse := func(format string, args ...interface{}) error {
		return &Refusal{Key: key, Problem: *problem.New(ProblemChartSourceNotAllowed, format, args...)}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return refuse("the chart source is not a valid URL")
	}
	shown := redactURL(redact.Shorten(raw, maxEcho))
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return refuse("chart source %s must not hold credentials, a query or a fragment; "+
			"credentials come from the Secret named by the deployment", shown)
	}
	t := source{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Hostname()), port: u.Port(), path: cleanPath(u.Path)}
	if t.plainHTTP() && !p.allowHTTP {
		return refuse("chart source %s is reached over plain http, which this deployment does not allow "+
			"(allow-http-chart-sources)", shown)
	}
	if p.allows(t) {
		return nil
	}
	return refuse("chart source %s is not in the deployment's allowed chart sources (allowed-chart-sources)", shown)
}

// pullPolicy reports whether s is a value Kubernetes knows for imagePullPolicy.
func pullPolicy(s string) bool { return s == "Always" || s == "IfNotPresent" || s == "Never" }

// valuesProblem says what in the values the Policy refuses, or "". It names keys, never values,
// except image repositories, which are not secret.
func (p Policy) valuesProblem(values map[string]interface{}) string {
	// The charts print many values unquoted into YAML: a line break in any string would become
	// objects of its own. And they evaluate some values as templates (tpl on extraArgs): "{{"
	// there would be code run as cluster-owner in the guest, able to read any object with lookup.
	// A string without "{{" is what tpl returns it as.
	if at := injectedString(values, ""); at != "" {
		return fmt.Sprintf("%s holds a line break or a template ({{): not allowed in chart values, "+
			"where the chart would render it as YAML or code of its own", at)
	}
	var problem string
	walkValues(values, "", func(at, key string, v interface{}) bool {
		for _, d := range deniedValueKeys() {
			if key == d {
				problem = fmt.Sprintf("%s adds privileges to the workload and is not allowed in chart values", at)
				return false
			}
		}
		if key == "pullPolicy" {
			if s, ok := v.(string); !ok || !pullPolicy(s) {
				problem = fmt.Sprintf("%s must be Always, IfNotPresent or Never", at)
				return false
			}
		}
		if key == "image" {
			problem = p.imageProblem(at, v)
			return problem == ""
		}
		return true
	})
	return problem
}

// injectedString returns the path of the first string, key or value, that holds a line break or
// "{{", or "".
func injectedString(v interface{}, at string) string {
	bad := func(s string) bool { return strings.ContainsAny(s, "\r\n") || strings.Contains(s, "{{") }
	switch t := v.(type) {
	case string:
		if bad(t) {
			return at
		}
	case map[string]interface{}:
		for _, k := range sortedKeys(t) {
			path := k
			if at != "" {
				path = at + "." + k
			}
			if bad(k) {
				return at + "." + "<a key>"
			}
			if found := injectedString(t[k], path); found != "" {
				return found
			}
		}
	case []interface{}:
		for i, x := range t {
			if found := injectedString(x, fmt.Sprintf("%s[%d]", at, i)); found != "" {
				return found
			}
		}
	}
	return ""
}

// walkValues calls fn for every key in every mapping of v, depth first, with its dotted path,
// until fn returns false.
func walkValues(v interface{}, prefix string, fn func(at, key string, v interface{}) bool) bool {
	switch t := v.(type) {
	case map[string]interface{}:
		for _, k := range sortedKeys(t) {
			at := k
			if prefix != "" {
				at = prefix + "." + k
			}
			if !fn(at, k, t[k]) || !walkValues(t[k], at, fn) {
				return false
			}
		}
	case []interface{}:
		for i, x := range t {
			if !walkValues(x, fmt.Sprintf("%s[%d]", prefix, i), fn) {
				return false
			}
		}
	}
	return true
}
