package helminstall

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartsource"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// Sources decides where a chart fetch may go besides its chart source; installpolicy.Policy is
// the deployment's. The chart source itself was checked before the fetch, but a redirect's target
// and the archive URL an index lists are chosen by the repository or registry, so each is asked
// about.
type Sources interface {
	// AllowsFetch reports whether a fetch of the chart at chartSource (Release.Ref or
	// Release.RepoURL) may read target.
	AllowsFetch(chartSource string, target *url.URL) bool
}

// scope is where one fetch may go.
type scope struct {
	// source is the chart source the fetch starts at: Release.Ref or Release.RepoURL.
	source string
	// sources is nil when the release names none: then only source's own scheme, host and port
	// are allowed, so that a Release built without a policy is confined rather than open.
	sources Sources
}

func (r Release) scope() scope {
	if r.Ref != "" {
		return scope{source: r.Ref, sources: r.Sources}
	}
	return scope{source: strings.TrimSuffix(r.RepoURL, "/"), sources: r.Sources}
}

func (s scope) allows(target *url.URL) bool {
	if s.sources != nil {
		return s.sources.AllowsFetch(s.source, target)
	}
	own, err := url.Parse(s.source)
	if err != nil {
		return false
	}
	if own.Scheme == "oci" {
		// The registry client speaks https, or plain http to a loopback registry.
		own.Scheme = "https"
		if chartsource.Loopback(own.Hostname()) {
			own.Scheme = "http"
		}
	}
	return chartsource.SameOrigin(own, target)
}

// refusal says that target is outside the fetch's scope, naming where it points without
// credentials or query, which may hold a signature.
func (s scope) refusal(what string, target *url.URL) error {
	return fmt.Errorf("refused %s %s: it is neither an allowed chart source nor a download location of %s",
		what, redact.URL(target.String()), redact.URL(s.source))
}

// maxRedirects bounds the redirects one request follows.
const maxRedirects = 5

// checkRedirect follows a redirect only on the scheme the request started with, so an https
// source never ends on plain http, and only within the fetch's scope, so an open redirect on an
// allowed host leads nowhere else. The credentials go on only to the scheme, host and port they
// were first sent to: net/http alone keeps them for another port of the same host.
func (s scope) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	first := via[0].URL
	if req.URL.Scheme != first.Scheme {
		return fmt.Errorf("refused a redirect from %s to %s", first.Scheme, req.URL.Scheme)
	}
	if !s.allows(req.URL) {
		return s.refusal("a redirect to", req.URL)
	}
	if !chartsource.SameOrigin(first, req.URL) {
		req.Header.Del("Authorization")
	}
	return nil
}
