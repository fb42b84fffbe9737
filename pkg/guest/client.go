// Package guest reaches one Rancher guest cluster through Rancher's cluster proxy: it builds a
// vetted client from the kubeconfig Rancher keeps for the cluster (nothing but Rancher's proxy
// URL and a token), bounds every request and answer, and checks the connection. What is written
// into the guest is pkg/kubevipconfig's and pkg/helminstall's. Nothing here caches a guest's
// credentials: every operation starts from the Secret as it is now, so a rotated token is used at
// once.
package guest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
	"github.com/kubefip/kube-fip-operator/pkg/version"
)

// KubeconfigKey is the key of Rancher's cluster kubeconfig Secret holding the kubeconfig.
const KubeconfigKey = "value"

// DefaultTimeout bounds every single request to a guest cluster.
const DefaultTimeout = 15 * time.Second

// ErrNoKubeconfig means the Secret has no kubeconfig (yet).
var ErrNoKubeconfig = errors.New("the cluster's kubeconfig Secret has no kubeconfig")

// ErrInvalidKubeconfig means the Secret's kubeconfig does not parse, or names no usable context.
var ErrInvalidKubeconfig = errors.New("the cluster's kubeconfig Secret does not hold a valid kubeconfig")

// Client reaches one guest cluster. It holds only the typed clients a pass uses, core/v1 and
// apps/v1, over one HTTP client: a full clientset would build some fifty group clients per
// guest and pass, which a start-up with a thousand guests pays for in memory. Helm builds what
// it needs from Config when it installs.
type Client struct {
	// Name is the guest cluster's name, for messages.
	Name   string
	Config *rest.Config
	Core   corev1client.CoreV1Interface
	Apps   appsv1client.AppsV1Interface
}

// Target is one guest cluster as the operator reaches it.
type Target struct {
	// Name is the guest cluster's name, for messages.
	Name string
	// ClusterID is its management cluster (the provisioning cluster's status.clusterName).
	ClusterID string
	// Kubeconfig is the kubeconfig Secret's data: untrusted.
	Kubeconfig []byte
	// Rancher are Rancher's own addresses, from its internal-server-url and server-url settings:
	// the kubeconfig's server must be the cluster proxy URL on one of them.
	Rancher []string
}

// NewClient builds a client for the guest t. The kubeconfig is untrusted: it must be what Rancher
// writes (see CheckKubeconfig), and the client is built from its server, CA data and token alone,
// so nothing else in it is ever used or run. Every request of the client, Helm's included, ends
// when pass ends (nil: never), takes at most timeout, and reads at most MaxGuestResponse bytes and
// MaxGuestResponseValues JSON values of answer. The error never quotes the kubeconfig: it carries credentials.
func NewClient(pass context.Context, t Target, timeout time.Duration) (*Client, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return newClient(t, timeout, withPass(pass, MaxGuestResponse, MaxGuestResponseValues))
}

// newClient builds a client for the guest t whose requests take at most timeout (0: no bound)
// and go through wrap.
func newClient(t Target, timeout time.Duration, wrap func(http.RoundTripper) http.RoundTripper) (*Client, error) {
	kc, err := CheckKubeconfig(t.Kubeconfig, t.ClusterID, t.Rancher)
	if err != nil {
		return nil, err
	}
	cfg := &rest.Config{
		Host:            kc.Server,
		BearerToken:     kc.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: kc.CAData},
		Timeout:         timeout,
		QPS:             20,
		Burst:           40,
		UserAgent:       version.UserAgent(),
		// JSON only: an answer's values are counted as it is read (LimitValues), which protobuf,
		// client-go's default for built-in kinds, would escape; and decoded, protobuf takes even
		// more room for its bytes (two bytes make an empty container of 408).
		ContentConfig: rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"},
	}
	cfg.Wrap(wrap)
	c := &Client{Name: t.Name, Config: cfg}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err == nil {
		c.Core, err = corev1client.NewForConfigAndClient(cfg, httpClient)
	}
	if err == nil {
		c.Apps, err = appsv1client.NewForConfigAndClient(cfg, httpClient)
	}
	if err != nil {
		return nil, fmt.Errorf("creating a client for guest cluster %s: %s", t.Name, redact.Error(err, kc.Token))
	}
	return c, nil
}

// Credentials are the secrets of the client's kubeconfig, for redact.Text: the token, and each
// part of a Rancher token "<name>:<key>".
func (c *Client) Credentials() []string {
	if c == nil || c.Config == nil || c.Config.BearerToken == "" {
		return nil
	}
	token := c.Config.BearerToken
	out := []string{token}
	if name, key, ok := strings.Cut(token, ":"); ok {
		out = append(out, name, key)
	}
	return out
}

// Redact is redact.Text with the client's credentials: the text as it may go into an Event, a
// condition or a log line.
func (c *Client) Redact(text string) string {
	return redact.Text(text, c.Credentials()...)
}
