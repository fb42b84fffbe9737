package outbound

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http/httpproxy"
)

// serverCA writes the CA of an httptest TLS server into a bundle file.
func serverCA(t *testing.T, srv *httptest.Server, extra string) string {
	t.Helper()
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	path := filepath.Join(t.TempDir(), "ca-additional.pem")
	if err := os.WriteFile(path, append(data, extra...), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func get(t *testing.T, n Network, url string) error {
	t.Helper()
	client := &http.Client{Transport: n.Transport(2*time.Second, 2*time.Second), Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return Explain(err)
	}
	resp.Body.Close()
	return nil
}

func TestAdditionalCAIsTrustedBesideTheSystemRoots(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()

	err := get(t, Network{}, srv.URL)
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) || !strings.Contains(err.Error(), "add that CA to additionalTrustedCAs") {
		t.Fatalf("without the bundle: %v; want an unknown authority naming additionalTrustedCAs", err)
	}
	n, err := Load(Settings{AdditionalCAFile: serverCA(t, srv, "")})
	if err != nil {
		t.Fatal(err)
	}
	if err := get(t, n, srv.URL); err != nil {
		t.Fatalf("with the bundle: %v", err)
	}
	// The system's roots stay: the pool is more than the bundle alone.
	alone := x509.NewCertPool()
	alone.AddCert(srv.Certificate())
	if n.roots.Equal(alone) {
		t.Error("the pool holds the additional CA alone: the system's roots are lost")
	}
	if s := n.String(); !strings.Contains(s, "1 additional CA certificates from ") {
		t.Errorf("String() = %q", s)
	}
}

func TestBadBundleIsRefusedWithItsProblem(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte("x")})
	garbage := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")})
	for _, c := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "absent.pem"), "cannot be read: no such file or directory"},
		{"empty", write("empty.pem", nil), "holds no PEM certificate"},
		{"text", write("text.pem", []byte("hello")), "holds no PEM certificate"},
		{"a key", write("key.pem", key), `holds a PEM block of type "RSA PRIVATE KEY" (number 1), not a CERTIFICATE`},
		{"not DER", write("der.pem", garbage), "holds a certificate that does not parse (number 1)"},
		{"over the cap", write("big.pem", make([]byte, MaxBundleBytes+1)), "is over 1048576 bytes"},
		{"a directory", dir, "cannot be read"},
	} {
		_, err := Load(Settings{AdditionalCAFile: c.path})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "the additional trusted CA bundle "+c.path) {
			t.Errorf("%s: %v; want an error naming the bundle and %q", c.name, err, c.want)
		}
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	if _, err := Load(Settings{AdditionalCAFile: serverCA(t, srv, "trailing text")}); err == nil || !strings.Contains(err.Error(), "something else than PEM blocks after its 1 certificates") {
		t.Errorf("trailing text: %v", err)
	}
}

func TestBadProxyIsRefusedWithoutItsPassword(t *testing.T) {
	for _, c := range []struct{ value, want string }{
		{"ftp://user:s3cret@proxy.example:21", `has scheme "ftp"`},
		{"http://user:s3cret@:3128", "names no host"},
	} {
		_, err := Load(Settings{Proxy: httpproxy.Config{HTTPSProxy: c.value}})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "HTTPS_PROXY=") {
			t.Errorf("%s: %v; want %q, naming HTTPS_PROXY without the password", c.value, err, c.want)
		}
	}
	n, err := Load(Settings{Proxy: httpproxy.Config{HTTPSProxy: "proxy.example:3128", NoProxy: ".svc"}})
	if err != nil {
		t.Fatalf("a bare host:port: %v", err)
	}
	if s := n.String(); !strings.Contains(s, "HTTPS_PROXY=proxy.example:3128 NO_PROXY=.svc") {
		t.Errorf("String() = %q", s)
	}
}

// connectProxy is a forward proxy of CONNECT that tunnels every request to target, or answers
// status when it is not 200.
func connectProxy(t *testing.T, target string, status int) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.Host)
		mu.Unlock()
		if r.Method != http.MethodConnect || status != http.StatusOK {
			http.Error(w, "no", status)
			return
		}
		up, err := net.Dial("tcp", target)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			up.Close()
			return
		}
		go func() { _, _ = io.Copy(up, buf); up.Close() }()
		_, _ = io.Copy(conn, up)
		conn.Close()
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func TestProxyCarriesTheCallsAndItsRefusalIsNamed(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	ca := serverCA(t, srv, "")
	// httptest's certificate is for example.com; the proxy tunnels to the server whatever the host.
	url := "https://example.com/index.yaml"

	proxy, seen := connectProxy(t, srv.Listener.Addr().String(), http.StatusOK)
	n, err := Load(Settings{AdditionalCAFile: ca, Proxy: httpproxy.Config{HTTPSProxy: proxy.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if err := get(t, n, url); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	if len(*seen) != 1 || (*seen)[0] != "CONNECT example.com:443" {
		t.Errorf("the proxy saw %v; want one CONNECT example.com:443", *seen)
	}

	n, err = Load(Settings{AdditionalCAFile: ca, Proxy: httpproxy.Config{HTTPSProxy: proxy.URL, NoProxy: "example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	_ = get(t, n, url) // example.com is not reached from here; only the proxy's log counts
	if len(*seen) != 1 {
		t.Errorf("NO_PROXY=example.com: the proxy saw %v; want nothing more", *seen)
	}

	forbidding, _ := connectProxy(t, srv.Listener.Addr().String(), http.StatusForbidden)
	n, _ = Load(Settings{AdditionalCAFile: ca, Proxy: httpproxy.Config{HTTPSProxy: forbidding.URL}})
	err = get(t, n, url)
	var refused *ProxyError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "the proxy "+forbidding.URL+" refused the connection to example.com:443 (403 Forbidden)") {
		t.Errorf("a proxy answering 403: %v", err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	n, _ = Load(Settings{Proxy: httpproxy.Config{HTTPSProxy: closed}})
	if err := get(t, n, url); err == nil || !strings.Contains(err.Error(), "proxyconnect") || !strings.Contains(err.Error(), "the proxy cannot be reached: check proxy") {
		t.Errorf("a proxy not listening: %v", err)
	}
}

func TestExplainLeavesOtherErrors(t *testing.T) {
	plain := errors.New("the server answered 404 Not Found")
	if got := Explain(plain); got != plain { //nolint:errorlint // the very error, not one wrapping it
		t.Errorf("Explain(%v) = %v", plain, got)
	}
	if Explain(nil) != nil {
		t.Error("Explain(nil) is not nil")
	}
}
