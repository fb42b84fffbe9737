package guestcluster

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"strings"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/helminstall"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartsource"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// Keys of the chart credentials Secret.
const (
	CredentialsUsernameKey = "username"
	CredentialsPasswordKey = "password"
	// CredentialsSourceKey names the one chart source the credentials belong to, as
	// scheme://host[:port]: whoever edits kube-fip-config chooses among the allowed sources, and
	// must not be able to send the credentials to any of them but their own.
	CredentialsSourceKey = "source"
)

// chartSecret is the chart credentials Secret as read: where it is, its credentials, and the
// chart source they belong to.
type chartSecret struct {
	where       string
	source      string
	credentials helminstall.Credentials
}

// chartCredentials reads the chart credentials Secret afresh (so a rotated password is used at
// once), or returns nil when the deployment names none. The password is masked in every message
// of the pass.
func (c *controller) chartCredentials(ctx context.Context, p *pass) (*chartSecret, *outcome) {
	secret, where, bad := c.readSecret(ctx, p, "the chart credentials Secret", c.opts.Namespace, c.opts.ChartCredentialsSecret, v1.ReasonChartCredentials, "")
	if secret == nil {
		return nil, bad
	}
	user, password := string(secret.Data[CredentialsUsernameKey]), string(secret.Data[CredentialsPasswordKey])
	if user == "" || password == "" {
		return nil, &outcome{reason: v1.ReasonChartCredentials,
			message: fmt.Sprintf("%s needs the keys %s, %s and %s", where, CredentialsUsernameKey, CredentialsPasswordKey, CredentialsSourceKey)}
	}
	p.credentials = append(p.credentials, password)
	source, err := credentialsSource(string(secret.Data[CredentialsSourceKey]))
	if err != nil {
		return nil, &outcome{reason: v1.ReasonChartCredentials, message: fmt.Sprintf("%s %v", where, err)}
	}
	return &chartSecret{where: where, source: source, credentials: helminstall.Credentials{Username: user, Password: password}}, nil
}

// credentialsSource checks the Secret's source key: scheme, host and optional port of one chart
// source, and nothing else, as the credentials are bound to exactly these. The value is not
// repeated in the error, as it may be a credential written under the wrong key.
func credentialsSource(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", fmt.Errorf("needs the key %s: the chart source the credentials belong to, as scheme://host[:port] "+
			"(such as https://charts.example.com or oci://registry.example.com:5000)", CredentialsSourceKey)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil, u.Host == "", u.Hostname() == "":
		return "", fmt.Errorf("has a key %s that is not scheme://host[:port] of a chart source", CredentialsSourceKey)
	case u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "oci":
		return "", fmt.Errorf("has a key %s that does not start with https://, http:// or oci://", CredentialsSourceKey)
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || (u.Path != "" && u.Path != "/"):
		return "", fmt.Errorf("has a key %s with more than scheme://host[:port] (a path, credentials, a query or a fragment): "+
			"the credentials go to every chart source of that scheme, host and port", CredentialsSourceKey)
	}
	return u.Scheme + "://" + u.Host, nil
}

// forRelease gives the credentials to rel when its chart source has the scheme, host and port
// they belong to. Otherwise rel is fetched without them and note says why, for the outcome.
func (s *chartSecret) forRelease(chart string, rel helminstall.Release) (creds *helminstall.Credentials, note string) {
	if s == nil {
		return nil, ""
	}
	from := cmp.Or(rel.Ref, rel.RepoURL)
	own, _ := url.Parse(s.source)
	if at, err := url.Parse(from); err == nil && chartsource.SameOrigin(own, at) {
		c := s.credentials
		return &c, ""
	}
	return nil, fmt.Sprintf("the credentials of %s were not used for %s: they belong to %s, not to its chart source %s",
		s.where, chart, s.source, redact.URL(from))
}

// withNotes adds to an install's message what the chart credentials were not used for, so that a
// fetch refused for want of them shows why.
func withNotes(message string, notes []string) string {
	return strings.Join(append([]string{message}, notes...), "; ")
}
