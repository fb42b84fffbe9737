package externaldns

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

// Server is a running BIND, Debian's named (scripts/install-servers installs it), serving one zone
// on loopback that only the holder of its TSIG key may change, through RFC 2136 updates, and read
// whole (AXFR): what external-dns's rfc2136 provider writes to.
type Server struct {
	// Addr is where it answers, on UDP and TCP: 127.0.0.1:<port>.
	Addr string
	// Zone is the zone it serves.
	Zone string
	// KeyName and Secret are the TSIG key (hmac-sha256, Secret in base64); Secret is never printed.
	KeyName, Secret string
	proc            *controlplane.Process
}

// KeyAlgorithm is the TSIG algorithm of every Server's key, as external-dns names it.
const KeyAlgorithm = "hmac-sha256"

// StartBIND runs named in the foreground on a free loopback port until the test ends, serving
// zone from an empty zone file (its SOA and NS records alone), and waits until it answers.
func StartBIND(t testing.TB, zone string) *Server {
	t.Helper()
	bin := "/usr/sbin/named"
	if _, err := os.Stat(bin); err != nil {
		t.Fatal("named is not installed: scripts/install-servers installs it from Debian's packages (as root)")
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	port := rig.FreePort(t)
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), Zone: zone, KeyName: "kube-fip-test", Secret: base64.StdEncoding.EncodeToString(secret)}
	conf := fmt.Sprintf(`options {
	directory %[1]q;
	pid-file %[7]q;
	session-keyfile %[8]q;
	managed-keys-directory %[1]q;
	listen-on port %[2]d { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion no;
	notify no;
	allow-query { 127.0.0.1; };
	dnssec-validation no;
};
controls { };
key %[3]q { algorithm %[4]s; secret %[5]q; };
zone %[6]q {
	type primary;
	file "zone.db";
	allow-update { key %[3]q; };
	allow-transfer { key %[3]q; };
};
`, dir, port, s.KeyName, KeyAlgorithm, s.Secret, zone, filepath.Join(dir, "named.pid"), filepath.Join(dir, "session.key"))
	soa := fmt.Sprintf("$TTL 60\n@ IN SOA ns.%[1]s. hostmaster.%[1]s. 1 60 60 600 60\n@ IN NS ns.%[1]s.\nns IN A 127.0.0.1\n", zone)
	rig.Must(t, os.WriteFile(filepath.Join(dir, "named.conf"), []byte(conf), 0o600))
	rig.Must(t, os.WriteFile(filepath.Join(dir, "zone.db"), []byte(soa), 0o600))
	cmd := exec.Command(bin, "-g", "-n", "1", "-c", filepath.Join(dir, "named.conf"))
	proc, err := controlplane.StartProcess(cmd, nil, cmd.Start)
	if err != nil {
		t.Fatalf("starting named: %v", err)
	}
	s.proc = proc
	t.Cleanup(func() { _ = proc.Stop(5 * time.Second) })
	err = rig.Until(15*time.Second, "named answering for "+zone, proc.Exited, func() (bool, error) {
		_, err := s.resolver().LookupNetIP(context.Background(), "ip4", "ns."+zone+".")
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, rig.LastLines(proc.Logs(), 8))
	}
	return s
}

// resolver asks s alone, over UDP, with no cache in between.
func (s *Server) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, s.Addr)
	}}
}

// Lookup asks s for the addresses of name of the family ("ip4": A, "ip6": AAAA); none when it has
// no such record.
func (s *Server) Lookup(name, family string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addrs, err := s.resolver().LookupNetIP(ctx, family, strings.TrimSuffix(name, ".")+".")
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return nil, nil
	}
	return addrs, err
}

// Logs is what named printed.
func (s *Server) Logs() string { return s.proc.Logs() }
