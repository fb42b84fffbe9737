package forwardproxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a private certificate authority a test makes: no system trusts it.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// File holds its certificate, PEM, as the Secret tls-ca-additional's ca-additional.pem does.
	File string
	// Pool trusts it alone.
	Pool *x509.CertPool
}

// NewCA makes a CA valid for an hour.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kube-fip test private CA"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{cert: cert, key: key, File: filepath.Join(t.TempDir(), "ca-additional.pem"), Pool: x509.NewCertPool()}
	ca.Pool.AddCert(cert)
	if err := os.WriteFile(ca.File, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return ca
}

// ServerConfig is a TLS server configuration with a certificate the CA signs for name.
func (ca *CA) ServerConfig(t testing.TB, name string) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// LoopbackName is a name of this machine that resolves to IPv4 loopback addresses alone and that
// a client's proxy selection does not exempt, as it does localhost and IP addresses: the machine's
// host name, as /etc/hosts names it on Debian and in most containers. It returns the name and the
// address it resolves to; the test fails when the machine has no such name.
func LoopbackName(t testing.TB) (name string, addr netip.Addr) {
	t.Helper()
	candidates := []string{"localhost.localdomain"}
	if h, err := os.Hostname(); err == nil {
		candidates = append([]string{h}, candidates...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, c := range candidates {
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", c)
		if err != nil || len(addrs) == 0 || c == "localhost" {
			continue
		}
		ok := true
		for _, a := range addrs {
			ok = ok && a.Unmap().IsLoopback()
		}
		if ok {
			return c, addrs[0].Unmap()
		}
	}
	t.Fatalf("none of %v resolves to IPv4 loopback addresses alone: the test serves under such a name, which only the proxy's connections reach", candidates)
	return "", netip.Addr{}
}

// Listener serves TLS on a loopback port. Once Lock is called it takes connections from
// OutgoingAddr alone, the proxy's, and closes any other at once; it records every client.
type Listener struct {
	net.Listener
	locked  atomic.Bool
	mu      sync.Mutex
	clients []netip.Addr
}

// Listen serves cfg's TLS on a free port of addr.
func Listen(t testing.TB, addr netip.Addr, cfg *tls.Config) *Listener {
	t.Helper()
	raw, err := net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	l := &Listener{}
	l.Listener = tls.NewListener(&filter{Listener: raw, l: l}, cfg)
	t.Cleanup(func() { _ = raw.Close() })
	return l
}

// Port is the port it serves on.
func (l *Listener) Port() int { return l.Addr().(*net.TCPAddr).Port }

// Lock takes connections from the proxy alone from now on.
func (l *Listener) Lock() { l.locked.Store(true) }

// Clients are the addresses of the connections taken since Lock, in order.
func (l *Listener) Clients() []netip.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]netip.Addr(nil), l.clients...)
}

type filter struct {
	net.Listener
	l *Listener
}

func (f *filter) Accept() (net.Conn, error) {
	for {
		c, err := f.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if !f.l.locked.Load() {
			return c, nil
		}
		from, _ := netip.ParseAddrPort(c.RemoteAddr().String())
		f.l.mu.Lock()
		f.l.clients = append(f.l.clients, from.Addr().Unmap())
		f.l.mu.Unlock()
		if from.Addr().Unmap() != netip.MustParseAddr(OutgoingAddr) {
			c.Close()
			continue
		}
		return c, nil
	}
}
