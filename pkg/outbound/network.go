package outbound

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/net/http/httpproxy"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// MaxBundleBytes bounds the additional CA bundle: about 500 certificates, far more than any
// organisation's chain of private CAs.
const MaxBundleBytes = 1 << 20

// Settings are the deployment's choices for the calls out of the cluster.
type Settings struct {
	// AdditionalCAFile, when set, is a PEM bundle of CA certificates trusted beside the system's
	// roots (the chart mounts the Secret tls-ca-additional, key ca-additional.pem, there).
	AdditionalCAFile string
	// Proxy is the proxy of each call by its scheme, and the hosts reached without it, as
	// HTTP_PROXY, HTTPS_PROXY and NO_PROXY say (httpproxy.FromEnvironment). Loopback addresses
	// and localhost are always reached without it.
	Proxy httpproxy.Config
}

// Network is what every call out of the cluster goes through. Its zero value trusts the system's
// roots and uses no proxy.
type Network struct {
	// roots are the system's roots and the additional CAs; nil: the system's roots alone.
	roots *x509.CertPool
	// additional counts the certificates of the additional bundle, and bundle names its file.
	additional int
	bundle     string
	// proxy picks the proxy of a request's URL; nil: none.
	proxy func(*url.URL) (*url.URL, error)
	// proxied describes the proxy settings for the log, without credentials.
	proxied string
}

// Load builds the Network of s. A bundle that cannot be read, is over MaxBundleBytes, or holds
// anything but PEM certificates, and a proxy that is not an http, https or socks5 URL with a
// host, are errors that name the problem: the operator refuses to start with them rather than
// fail every call later.
func Load(s Settings) (Network, error) {
	var n Network
	if s.AdditionalCAFile != "" {
		certs, err := readBundle(s.AdditionalCAFile)
		if err != nil {
			return Network{}, fmt.Errorf("the additional trusted CA bundle %s %w", s.AdditionalCAFile, err)
		}
		roots, err := x509.SystemCertPool()
		if err != nil || roots == nil {
			roots = x509.NewCertPool()
		}
		for _, c := range certs {
			roots.AddCert(c)
		}
		n.roots, n.additional, n.bundle = roots, len(certs), s.AdditionalCAFile
	}
	var shown []string
	for _, p := range []struct{ name, value string }{{"HTTP_PROXY", s.Proxy.HTTPProxy}, {"HTTPS_PROXY", s.Proxy.HTTPSProxy}} {
		if p.value == "" {
			continue
		}
		if err := checkProxy(p.value); err != nil {
			return Network{}, fmt.Errorf("the proxy %s=%s %w", p.name, redact.URL(p.value), err)
		}
		shown = append(shown, p.name+"="+redact.URL(p.value))
	}
	if len(shown) > 0 {
		cfg := s.Proxy
		n.proxy = cfg.ProxyFunc()
		n.proxied = strings.Join(shown, " ") + " NO_PROXY=" + redact.Cap(cfg.NoProxy, 512)
	}
	return n, nil
}

// readBundle reads at most MaxBundleBytes of path and parses every PEM block of it as a
// certificate; the error completes a sentence about the bundle.
func readBundle(path string) ([]*x509.Certificate, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot be read: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxBundleBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", err)
	}
	if len(data) > MaxBundleBytes {
		return nil, fmt.Errorf("is over %d bytes", MaxBundleBytes)
	}
	var certs []*x509.Certificate
	for i := 1; ; i++ {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("holds a PEM block of type %q (number %d), not a CERTIFICATE", redact.Cap(block.Type, 40), i)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("holds a certificate that does not parse (number %d): %w", i, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
	}
	if strings.TrimSpace(string(data)) != "" {
		return nil, fmt.Errorf("holds something else than PEM blocks after its %d certificates", len(certs))
	}
	return certs, nil
}

func checkProxy(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !strings.Contains(raw, "://") {
		// httpproxy takes a bare host:port for http://host:port; so does this.
		if u, err = url.Parse("http://" + raw); err != nil {
			return errors.New("is not a URL")
		}
	}
	switch u.Scheme {
	case "http", "https", "socks5", "socks5h":
	default:
		return fmt.Errorf("has scheme %q; want http, https or socks5", redact.Cap(u.Scheme, 16))
	}
	if u.Hostname() == "" {
		return errors.New("names no host")
	}
	return nil
}

// Transport is an HTTP transport of the Network: connections opened within connect (TCP, the
// proxy's CONNECT and TLS), answers' headers awaited at most response. Build one per user and keep
// it: it holds the idle connections.
func (n Network) Transport(connect, response time.Duration) *http.Transport {
	dialer := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		DialContext:           dialer.DialContext,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: n.roots},
		TLSHandshakeTimeout:   connect,
		ResponseHeaderTimeout: response,
		ExpectContinueTimeout: time.Second,
		MaxIdleConns:          8,
		IdleConnTimeout:       30 * time.Second,
		ForceAttemptHTTP2:     true,
		// A proxy that refuses the tunnel says so in its status; net/http would keep only the
		// status text, without saying the proxy answered it.
		OnProxyConnectResponse: func(_ context.Context, proxy *url.URL, req *http.Request, resp *http.Response) error {
			if resp.StatusCode/100 == 2 {
				return nil
			}
			return &ProxyError{Proxy: redact.URL(proxy.String()), Target: req.Host, Status: resp.Status}
		},
	}
	if n.proxy != nil {
		t.Proxy = func(req *http.Request) (*url.URL, error) { return n.proxy(req.URL) }
	}
	return t
}

// String says what the Network trusts and which proxy it goes through, for the log at start.
func (n Network) String() string {
	trust := "the system's root CAs"
	if n.bundle != "" {
		trust = fmt.Sprintf("the system's root CAs and %d additional CA certificates from %s", n.additional, n.bundle)
	}
	proxy := "no proxy"
	if n.proxied != "" {
		proxy = "the proxy " + n.proxied
	}
	return trust + ", " + proxy
}
