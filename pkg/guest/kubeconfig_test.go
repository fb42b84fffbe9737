package guest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	testClusterID = "c-m-abcd1234"
	testToken     = "kubeconfig-u-abcd1234:t0ps3cr3tt0k3nvalue"
	testServer    = "https://rancher.example.com/k8s/clusters/" + testClusterID
)

// testRancher are the addresses the tests' Rancher has in its settings: internal-server-url and
// server-url, here three so that a path prefix and a port are covered.
func testRancher() []string {
	return []string{"https://rancher.example.com", "https://example.com/rancher/", "https://127.0.0.1:8443"}
}

// target is the guest of the tests with kubeconfig and cluster id.
func target(clusterID string, kubeconfig []byte) Target {
	return Target{Name: "guest", ClusterID: clusterID, Kubeconfig: kubeconfig, Rancher: testRancher()}
}

func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rancher-ca"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// rancherKubeconfig is the kubeconfig Rancher writes into a provisioning cluster's
// <name>-kubeconfig Secret (rancher/rancher pkg/provisioningv2/kubeconfig/manager.go).
func rancherKubeconfig(ca []byte) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: testServer, CertificateAuthorityData: ca}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: testToken}
	cfg.Contexts["default"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "user"}
	cfg.CurrentContext = "default"
	return cfg
}

func write(t *testing.T, cfg *clientcmdapi.Config) []byte {
	t.Helper()
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheckKubeconfigAcceptsWhatRancherWrites(t *testing.T) {
	ca := testCA(t)
	for name, cfg := range map[string]*clientcmdapi.Config{
		"with Rancher's CA":          rancherKubeconfig(ca),
		"with a publicly trusted CA": rancherKubeconfig(nil),
		"with a path prefix": with(rancherKubeconfig(ca), func(c *clientcmdapi.Config) {
			c.Clusters["cluster"].Server = "https://example.com/rancher/k8s/clusters/" + testClusterID
		}),
		"with a port": with(rancherKubeconfig(ca), func(c *clientcmdapi.Config) {
			c.Clusters["cluster"].Server = "https://127.0.0.1:8443/k8s/clusters/" + testClusterID
		}),
		"with Rancher's host spelled otherwise": with(rancherKubeconfig(ca), func(c *clientcmdapi.Config) {
			c.Clusters["cluster"].Server = "https://RANCHER.example.com.:443/k8s/clusters/" + testClusterID
		}),
		"with unused other contexts":  with(rancherKubeconfig(ca), addUnusedExecUser),
		"with compression turned off": with(rancherKubeconfig(ca), func(c *clientcmdapi.Config) { c.Clusters["cluster"].DisableCompression = true }),
	} {
		t.Run(name, func(t *testing.T) {
			kc, err := CheckKubeconfig(write(t, cfg), testClusterID, testRancher())
			if err != nil {
				t.Fatalf("CheckKubeconfig = %v; want it accepted", err)
			}
			if kc.Token != testToken || kc.Server != cfg.Clusters["cluster"].Server || string(kc.CAData) != string(cfg.Clusters["cluster"].CertificateAuthorityData) {
				t.Errorf("CheckKubeconfig kept %s, CA %d bytes; want the server, CA and token", kc.Server, len(kc.CAData))
			}
			c, err := NewClient(nil, target(testClusterID, write(t, cfg)), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if c.Config.ExecProvider != nil || c.Config.AuthProvider != nil || c.Config.Insecure || c.Config.BearerTokenFile != "" ||
				c.Config.Username != "" || c.Config.Proxy != nil || c.Config.Impersonate.UserName != "" {
				t.Errorf("the client config uses more than server, CA and token: %+v", c.Config)
			}
		})
	}
}

func with(cfg *clientcmdapi.Config, change func(*clientcmdapi.Config)) *clientcmdapi.Config {
	change(cfg)
	return cfg
}

// addUnusedExecUser adds a context the current context does not name, whose user has an exec
// plugin: never used, so not refused.
func addUnusedExecUser(c *clientcmdapi.Config) {
	c.AuthInfos["other"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "/bin/false", APIVersion: "client.authentication.k8s.io/v1"}}
	c.Contexts["other"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "other"}
}

// TestCheckKubeconfigRefusesUntrustedFeatures: each feature a kubeconfig may ask for, and Rancher
// never writes, is refused with ErrKubeconfigRefused and a reason naming it, never its value.
func TestCheckKubeconfigRefusesUntrustedFeatures(t *testing.T) {
	ca := testCA(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "exec-ran")
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(testToken), 0o600); err != nil {
		t.Fatal(err)
	}
	user := func(c *clientcmdapi.Config) *clientcmdapi.AuthInfo { return c.AuthInfos["user"] }
	cluster := func(c *clientcmdapi.Config) *clientcmdapi.Cluster { return c.Clusters["cluster"] }
	for _, tc := range []struct {
		name   string
		change func(*clientcmdapi.Config)
		says   string
	}{
		{"exec plugin", func(c *clientcmdapi.Config) {
			user(c).Exec = &clientcmdapi.ExecConfig{
				APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
				Args: []string{"-c", "touch " + marker + `; echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"x"}}'`},
			}
		}, "exec credential plugin"},
		{"exec plugin without a token", func(c *clientcmdapi.Config) {
			user(c).Token = ""
			user(c).Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", Args: []string{"-c", "touch " + marker}}
		}, "exec credential plugin"},
		{"auth-provider plugin", func(c *clientcmdapi.Config) {
			user(c).AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"id-token": "x"}}
		}, "auth-provider"},
		{"token file", func(c *clientcmdapi.Config) { user(c).Token, user(c).TokenFile = "", tokenFile }, "tokenFile"},
		{"token file beside a token", func(c *clientcmdapi.Config) {
			user(c).TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
		}, "tokenFile"},
		{"client certificate file", func(c *clientcmdapi.Config) { user(c).ClientCertificate = "/etc/kubernetes/pki/admin.crt" }, "client certificate or key from a file"},
		{"client key file", func(c *clientcmdapi.Config) { user(c).ClientKey = "/etc/kubernetes/pki/admin.key" }, "client certificate or key from a file"},
		{"client certificate data", func(c *clientcmdapi.Config) { user(c).ClientCertificateData, user(c).ClientKeyData = ca, []byte("key") }, "client certificate"},
		{"username and password", func(c *clientcmdapi.Config) { user(c).Username, user(c).Password = "admin", "S3CRETpassword" }, "username and password"},
		{"impersonation", func(c *clientcmdapi.Config) { user(c).Impersonate = "system:admin" }, "impersonates"},
		{"impersonated groups", func(c *clientcmdapi.Config) { user(c).ImpersonateGroups = []string{"system:masters"} }, "impersonates"},
		{"no token", func(c *clientcmdapi.Config) { user(c).Token = "" }, "no token"},
		{"insecure TLS", func(c *clientcmdapi.Config) {
			cluster(c).InsecureSkipTLSVerify, cluster(c).CertificateAuthorityData = true, nil
		}, "insecure-skip-tls-verify"},
		{"certificate authority file", func(c *clientcmdapi.Config) { cluster(c).CertificateAuthority = "/etc/ssl/certs/ca.pem" }, "certificate authority from a file"},
		{"CA data that is no certificate", func(c *clientcmdapi.Config) { cluster(c).CertificateAuthorityData = []byte("not pem") }, "no PEM certificate"},
		{"tls-server-name", func(c *clientcmdapi.Config) { cluster(c).TLSServerName = "kubernetes.default" }, "tls-server-name"},
		{"proxy-url", func(c *clientcmdapi.Config) { cluster(c).ProxyURL = "http://proxy.example.com:3128" }, "proxy-url"},
		{"plain http server", func(c *clientcmdapi.Config) {
			cluster(c).Server = "http://rancher.example.com/k8s/clusters/" + testClusterID
		}, "is not https"},
		{"server of another cluster", func(c *clientcmdapi.Config) {
			cluster(c).Server = "https://rancher.example.com/k8s/clusters/c-m-other123"
		}, "not Rancher's cluster proxy URL for cluster " + testClusterID},
		{"server that is not the proxy", func(c *clientcmdapi.Config) { cluster(c).Server = "https://10.43.0.1:443" }, "not Rancher's cluster proxy URL"},
		{"server routed to another cluster by its prefix", func(c *clientcmdapi.Config) {
			cluster(c).Server = "https://rancher.example.com/k8s/clusters/c-m-other123/k8s/clusters/" + testClusterID
		}, "not Rancher's cluster proxy URL"},
		{"server with dot segments", func(c *clientcmdapi.Config) {
			cluster(c).Server = "https://rancher.example.com/x/../k8s/clusters/" + testClusterID
		}, "not Rancher's cluster proxy URL"},
		{"server with escaped path", func(c *clientcmdapi.Config) {
			cluster(c).Server = "https://rancher.example.com/k8s%2Fclusters%2Fc-m-other123%2F/k8s/clusters/" + testClusterID
		}, "escaped characters"},
		{"server on a host Rancher does not name", func(c *clientcmdapi.Config) {
			cluster(c).Server = "https://evil.example:8443/k8s/clusters/" + testClusterID
		}, "not Rancher's cluster proxy URL"},
		{"server on Rancher's host at another port", func(c *clientcmdapi.Config) {
			cluster(c).Server = "https://rancher.example.com:8443/k8s/clusters/" + testClusterID
		}, "not Rancher's cluster proxy URL"},
		{"server behind a prefix Rancher does not have", func(c *clientcmdapi.Config) {
			cluster(c).Server = "https://rancher.example.com/meta/proxy/other.example/k8s/clusters/" + testClusterID
		}, "not Rancher's cluster proxy URL"},
		{"server with the proxy path in other case", func(c *clientcmdapi.Config) {
			cluster(c).Server = "https://rancher.example.com/K8S/clusters/" + testClusterID
		}, "not Rancher's cluster proxy URL"},
		{"server on a host that only starts like Rancher's", func(c *clientcmdapi.Config) {
			cluster(c).Server = "https://rancher.example.com.evil.example/k8s/clusters/" + testClusterID
		}, "not Rancher's cluster proxy URL"},
		{"server on a trailing-dot host Rancher does not name", func(c *clientcmdapi.Config) {
			cluster(c).Server = "https://evil.example./k8s/clusters/" + testClusterID
		}, "not Rancher's cluster proxy URL"},
		{"server with a longer cluster id", func(c *clientcmdapi.Config) {
			cluster(c).Server = "https://rancher.example.com/k8s/clusters/x" + testClusterID
		}, "not Rancher's cluster proxy URL"},
		{"server with a trailing path", func(c *clientcmdapi.Config) {
			cluster(c).Server = testServer + "/api"
		}, "not Rancher's cluster proxy URL"},
		{"server with credentials", func(c *clientcmdapi.Config) {
			cluster(c).Server = "https://admin:S3CRETpassword@rancher.example.com/k8s/clusters/" + testClusterID
		}, "carries credentials"},
		{"server with a query", func(c *clientcmdapi.Config) { cluster(c).Server = testServer + "?token=S3CRETpassword" }, "query"},
		{"server without a host", func(c *clientcmdapi.Config) { cluster(c).Server = "https:///k8s/clusters/" + testClusterID }, "names no host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rancherKubeconfig(ca)
			tc.change(cfg)
			kc := write(t, cfg)
			c, err := NewClient(nil, target(testClusterID, kc), time.Second)
			if !errors.Is(err, ErrKubeconfigRefused) || c != nil {
				t.Fatalf("NewClient = %v, %v; want ErrKubeconfigRefused", c, err)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("the refusal %q does not say %q", err, tc.says)
			}
			for _, secret := range []string{testToken, "t0ps3cr3t", "S3CRETpassword", "BEGIN CERTIFICATE", tokenFile, "/etc/", "/var/run", "system:masters", "id-token"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the refusal %q quotes %q", err, secret)
				}
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the exec plugin ran")
			}
		})
	}
}

func TestCheckKubeconfigNeedsAUsableContextAndClusterID(t *testing.T) {
	ca := testCA(t)
	for name, tc := range map[string]struct {
		kubeconfig []byte
		clusterID  string
		want       error
	}{
		"empty":                {nil, testClusterID, ErrNoKubeconfig},
		"garbage":              {[]byte("apiVersion: v1\nusers:\n- user: {token: " + testToken + "}\n  garbage"), testClusterID, ErrInvalidKubeconfig},
		"no current context":   {write(t, with(rancherKubeconfig(ca), func(c *clientcmdapi.Config) { c.CurrentContext = "" })), testClusterID, ErrInvalidKubeconfig},
		"missing context":      {write(t, with(rancherKubeconfig(ca), func(c *clientcmdapi.Config) { c.CurrentContext = "nope" })), testClusterID, ErrInvalidKubeconfig},
		"missing cluster":      {write(t, with(rancherKubeconfig(ca), func(c *clientcmdapi.Config) { delete(c.Clusters, "cluster") })), testClusterID, ErrInvalidKubeconfig},
		"missing user":         {write(t, with(rancherKubeconfig(ca), func(c *clientcmdapi.Config) { delete(c.AuthInfos, "user") })), testClusterID, ErrInvalidKubeconfig},
		"no cluster id":        {write(t, rancherKubeconfig(ca)), "", ErrKubeconfigRefused},
		"cluster id with path": {write(t, rancherKubeconfig(ca)), "c-m-x/../y", ErrKubeconfigRefused},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewClient(nil, target(tc.clusterID, tc.kubeconfig), time.Second)
			if !errors.Is(err, tc.want) {
				t.Errorf("NewClient = %v, want %v", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), testToken) {
				t.Errorf("the error %q quotes the token", err)
			}
		})
	}
}

func TestClientRedactsItsCredentials(t *testing.T) {
	c, err := NewClient(nil, target(testClusterID, write(t, rancherKubeconfig(testCA(t)))), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		"401 for " + testToken,
		"the key t0ps3cr3tt0k3nvalue was refused",
		"Get \"https://x:t0ps3cr3tt0k3nvalue@rancher.example.com/k8s/clusters/c-m-abcd1234/api\": EOF",
	} {
		if out := c.Redact(in); strings.Contains(out, "t0ps3cr3tt0k3nvalue") {
			t.Errorf("Redact(%q) = %q", in, out)
		}
	}
	var none *Client
	if none.Redact("https://u:p4ssw0rd@h/") != "https://REDACTED@h/" {
		t.Error("a nil client does not redact URLs")
	}
}

// TestCheckKubeconfigNeedsRancherAddresses: without Rancher's address settings no server can be
// trusted, and the refusal names the settings.
func TestCheckKubeconfigNeedsRancherAddresses(t *testing.T) {
	_, err := CheckKubeconfig(write(t, rancherKubeconfig(testCA(t))), testClusterID, nil)
	if !errors.Is(err, ErrKubeconfigRefused) || !strings.Contains(err.Error(), SettingInternalServerURL) || !strings.Contains(err.Error(), SettingServerURL) {
		t.Errorf("CheckKubeconfig without Rancher's addresses = %v; want a refusal naming both settings", err)
	}
	for _, base := range []string{"http://rancher.example.com", "https://", "not a url", "https://u:p@rancher.example.com"} {
		if _, err := CheckKubeconfig(write(t, rancherKubeconfig(nil)), testClusterID, []string{base}); !errors.Is(err, ErrKubeconfigRefused) {
			t.Errorf("with Rancher's address %q: %v; want a refusal (it is no https URL of a host)", base, err)
		}
	}
}
