package guest

import (
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// ErrKubeconfigRefused means the kubeconfig asks for something Rancher never writes into a cluster's
// kubeconfig Secret, and that would let whoever can write the Secret run code in the operator,
// read its files, weaken TLS or point it at another cluster.
var ErrKubeconfigRefused = errors.New("the cluster's kubeconfig is refused")

// ProxyPathPrefix is the path of Rancher's cluster proxy; the cluster's id follows it.
const ProxyPathPrefix = "/k8s/clusters/"

// Kubeconfig is what the operator takes from a guest's kubeconfig: nothing else.
type Kubeconfig struct {
	// Server is Rancher's cluster proxy URL for the cluster.
	Server string
	// CAData is the PEM CA bundle that signs Rancher's certificate; empty when Rancher's
	// certificate is signed by a CA the system trusts.
	CAData []byte
	// Token is the bearer token of the cluster's Rancher user.
	Token string
}

// CheckKubeconfig parses a guest kubeconfig as untrusted input and keeps only what Rancher writes
// for a provisioning cluster (rancher/rancher pkg/provisioningv2/kubeconfig): the current
// context's server, which must be Rancher's proxy URL for clusterID on one of Rancher's own
// addresses (rancher, see RancherServer), its certificate-authority-data, and its user's token.
// Everything that would make client-go run a program, read a file, skip or bend TLS verification,
// use a proxy, send a password or act as someone else is refused, before any client exists:
//   - user: exec and auth-provider plugins, tokenFile, client-certificate and client-key files,
//     client certificate and key data (Rancher authenticates the proxy by token only), username
//     and password, impersonation;
//   - cluster: insecure-skip-tls-verify, a certificate-authority file, tls-server-name, proxy-url.
//
// Each refusal wraps ErrKubeconfigRefused and names the field, never its value.
func CheckKubeconfig(kubeconfig []byte, clusterID string, rancher []string) (*Kubeconfig, error) {
	if len(kubeconfig) == 0 {
		return nil, ErrNoKubeconfig
	}
	if errs := validation.IsDNS1123Label(clusterID); len(errs) > 0 {
		return nil, fmt.Errorf("%w: the provisioning cluster names no valid management cluster (status.clusterName %q)",
			ErrKubeconfigRefused, redact.Cap(clusterID, 64))
	}
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		// The parser's message may quote the document: say nothing of it.
		return nil, ErrInvalidKubeconfig
	}
	context, ok := cfg.Contexts[cfg.CurrentContext]
	if cfg.CurrentContext == "" || !ok || context == nil {
		return nil, fmt.Errorf("%w: its current-context names no context", ErrInvalidKubeconfig)
	}
	cluster, ok := cfg.Clusters[context.Cluster]
	if !ok || cluster == nil {
		return nil, fmt.Errorf("%w: its current context names no cluster", ErrInvalidKubeconfig)
	}
	user, ok := cfg.AuthInfos[context.AuthInfo]
	if !ok || user == nil {
		return nil, fmt.Errorf("%w: its current context names no user", ErrInvalidKubeconfig)
	}
	if err := checkUser(user); err != nil {
		return nil, err
	}
	if err := checkCluster(cluster, clusterID, rancher); err != nil {
		return nil, err
	}
	return &Kubeconfig{Server: cluster.Server, CAData: cluster.CertificateAuthorityData, Token: user.Token}, nil
}

// refused is the error for a kubeconfig field the operator does not accept.
func refused(format string, args ...interface{}) error {
	return fmt.Errorf("%w: %s; only Rancher's cluster proxy URL, certificate-authority-data and a token are accepted",
		ErrKubeconfigRefused, fmt.Sprintf(format, args...))
}

func checkUser(u *clientcmdapi.AuthInfo) error {
	switch {
	case u.Exec != nil:
		return refused("its user has an exec credential plugin, which would run a program inside the operator")
	case u.AuthProvider != nil:
		return refused("its user has an auth-provider plugin")
	case u.TokenFile != "":
		return refused("its user reads the token from a file (tokenFile)")
	case u.ClientCertificate != "" || u.ClientKey != "":
		return refused("its user reads a client certificate or key from a file")
	case len(u.ClientCertificateData) > 0 || len(u.ClientKeyData) > 0:
		return refused("its user has a client certificate")
	case u.Username != "" || u.Password != "":
		return refused("its user has a username and password")
	case u.Impersonate != "" || u.ImpersonateUID != "" || len(u.ImpersonateGroups) > 0 || len(u.ImpersonateUserExtra) > 0:
		return refused("its user impersonates another user")
	case u.Token == "":
		return refused("its user has no token")
	}
	return nil
}

func checkCluster(c *clientcmdapi.Cluster, clusterID string, rancher []string) error {
	switch {
	case c.InsecureSkipTLSVerify:
		return refused("its cluster sets insecure-skip-tls-verify")
	case c.CertificateAuthority != "":
		return refused("its cluster reads the certificate authority from a file")
	case c.TLSServerName != "":
		return refused("its cluster sets tls-server-name")
	case c.ProxyURL != "":
		return refused("its cluster sets a proxy-url")
	}
	if len(c.CertificateAuthorityData) > 0 {
		if block, _ := pem.Decode(c.CertificateAuthorityData); block == nil || block.Type != "CERTIFICATE" {
			return refused("its certificate-authority-data holds no PEM certificate")
		}
	}
	u, err := url.Parse(c.Server)
	if err != nil || c.Server == "" {
		return refused("its server is not a URL")
	}
	switch {
	case u.Scheme != "https":
		return refused("its server %s is not https", redact.URL(c.Server))
	case u.User != nil:
		return refused("its server %s carries credentials", redact.URL(c.Server))
	case u.Host == "" || u.Hostname() == "":
		return refused("its server %s names no host", redact.URL(c.Server))
	case u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || u.RawPath != "":
		return refused("its server %s has a query, a fragment or escaped characters", redact.URL(c.Server))
	}
	if len(rancher) == 0 {
		return fmt.Errorf("%w: Rancher's %s and %s settings are both empty, so no server can be told to be Rancher's",
			ErrKubeconfigRefused, SettingInternalServerURL, SettingServerURL)
	}
	got := canonicalServer(u)
	for _, base := range rancher {
		if want, ok := proxyURL(base, clusterID); ok && got == want {
			return nil
		}
	}
	return refused("its server %s is not Rancher's cluster proxy URL for cluster %s (%s%s on Rancher's %s or %s)",
		redact.URL(c.Server), clusterID, ProxyPathPrefix, clusterID, SettingInternalServerURL, SettingServerURL)
}

// Rancher's settings (management.cattle.io/v3 Setting) holding its own address. Rancher writes a
// provisioning cluster's kubeconfig with internal-server-url (rancher/rancher
// pkg/provisioningv2/kubeconfig), which it derives from server-url: the address of its in-cluster
// Service, or server-url itself when there is none.
const (
	SettingInternalServerURL = "internal-server-url"
	SettingServerURL         = "server-url"
)

// proxyURL is the canonical form of Rancher's cluster proxy URL for clusterID on the Rancher
// address base; false when base is no https URL.
func proxyURL(base, clusterID string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.RawPath != "" {
		return "", false
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + ProxyPathPrefix + clusterID
	return canonicalServer(u), true
}

// canonicalServer writes u's scheme, host and path in one form, so that two spellings of one
// address compare equal and nothing else does: the scheme and host lower-cased, a trailing dot of
// the host and the default port dropped; the path kept exactly, case and all.
func canonicalServer(u *url.URL) string {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if port := u.Port(); port != "" && port != "443" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return strings.ToLower(u.Scheme) + "://" + host + u.Path
}
