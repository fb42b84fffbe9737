package guest

import (
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// ErrKubeconfigRefused: the kubeconfig asks for something Rancher never writes into a cluster's
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
// context's server, which must be https and Rancher's proxy URL for clusterID
// (".../k8s/clusters/<clusterID>"), its certificate-authority-data, and its user's token.
// Everything that would make client-go run a program, read a file, skip or bend TLS verification,
// use a proxy, send a password or act as someone else is refused, before any client exists:
//   - user: exec and auth-provider plugins, tokenFile, client-certificate and client-key files,
//     client certificate and key data (Rancher authenticates the proxy by token only), username
//     and password, impersonation;
//   - cluster: insecure-skip-tls-verify, a certificate-authority file, tls-server-name, proxy-url.
//
// Each refusal wraps ErrKubeconfigRefused and names the field, never its value.
func CheckKubeconfig(kubeconfig []byte, clusterID string) (*Kubeconfig, error) {
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
	if err := checkCluster(cluster, clusterID); err != nil {
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

func checkCluster(c *clientcmdapi.Cluster, clusterID string) error {
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
	want := ProxyPathPrefix + clusterID
	switch {
	case u.Scheme != "https":
		return refused("its server %s is not https", redact.URL(c.Server))
	case u.User != nil:
		return refused("its server %s carries credentials", redact.URL(c.Server))
	case u.Host == "" || u.Hostname() == "":
		return refused("its server %s names no host", redact.URL(c.Server))
	case u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return refused("its server %s has a query or fragment", redact.URL(c.Server))
	case !proxyPathFor(u, want):
		return refused("its server %s is not Rancher's cluster proxy URL for cluster %s (a path ending in %s)",
			redact.URL(c.Server), clusterID, want)
	}
	return nil
}

// proxyPathFor says whether u's path is want, under at most a plain prefix of Rancher's own: no
// second proxy path that the proxy would route to another cluster, no dot or empty segments, no
// escaped characters.
func proxyPathFor(u *url.URL, want string) bool {
	prefix, ok := strings.CutSuffix(u.Path, want)
	if !ok || u.RawPath != "" || strings.Contains(prefix+"/", ProxyPathPrefix) {
		return false
	}
	if prefix == "" {
		return true
	}
	for _, segment := range strings.Split(strings.TrimPrefix(prefix, "/"), "/") {
		if segment == "" || segment == "." || segment == ".." {
			return false
		}
	}
	return strings.HasPrefix(prefix, "/")
}
