// Package forwardproxy runs a real HTTP forward proxy, Debian's tinyproxy (installed by
// scripts/install-servers), on loopback for the tests of the operator's calls out of the cluster, and
// serves TLS under a private CA that only the proxy's connections may reach.
package forwardproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// OutgoingAddr is the loopback address the proxy opens its connections to the servers from: a
// server that accepts connections from it alone is reached through the proxy alone.
const OutgoingAddr = "127.0.0.2"

// Proxy is a running tinyproxy.
type Proxy struct {
	// URL is the proxy's address, http://127.0.0.1:<port>, as HTTPS_PROXY names it.
	URL string
	log string
}

// binary finds tinyproxy where Debian installs it.
func binary() (string, error) {
	if p, err := exec.LookPath("tinyproxy"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("tinyproxy is not installed: scripts/install-servers installs it from Debian's packages (as root)")
}

// Start runs tinyproxy on a free loopback port until the test ends. It takes clients from loopback
// alone, tunnels (CONNECT) to the ports allowed alone, answering any other with 403, and opens its
// connections from OutgoingAddr. Its access log is Log's.
func Start(t testing.TB, allowed ...int) *Proxy {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	p := &Proxy{URL: fmt.Sprintf("http://127.0.0.1:%d", port), log: filepath.Join(dir, "access.log")}
	conf := []string{
		fmt.Sprintf("Port %d", port),
		"Listen 127.0.0.1",
		"Bind " + OutgoingAddr,
		"Timeout 30",
		"MaxClients 50",
		"Allow 127.0.0.1",
		"DisableViaHeader Yes",
		fmt.Sprintf("LogFile %q", p.log),
		"LogLevel Connect",
	}
	if len(allowed) == 0 {
		// tinyproxy tunnels to any port when none is listed: name one nothing serves on.
		allowed = []int{1}
	}
	for _, a := range allowed {
		conf = append(conf, fmt.Sprintf("ConnectPort %d", a))
	}
	confFile := filepath.Join(dir, "tinyproxy.conf")
	if err := os.WriteFile(confFile, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-d", "-c", confFile)
	out, err := os.Create(filepath.Join(dir, "output"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited, done := make(chan error, 1), make(chan struct{})
	go func() {
		exited <- cmd.Wait()
		out.Close()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", strings.TrimPrefix(p.URL, "http://"))
		if err == nil {
			c.Close()
			return p
		}
		select {
		case err := <-exited:
			data, _ := os.ReadFile(filepath.Join(dir, "output"))
			t.Fatalf("tinyproxy exited at start (%v):\n%s", err, data)
		case <-ctx.Done():
			t.Fatalf("tinyproxy does not listen on %s: %v", p.URL, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// connectLine is a request line of tinyproxy's log: "Request (file descriptor 5): CONNECT host:port HTTP/1.1".
var connectLine = regexp.MustCompile(`Request \(file descriptor \d+\): CONNECT (\S+) HTTP/`)

// Connects are the targets (host:port) of every CONNECT the proxy's log records, in order.
func (p *Proxy) Connects(t testing.TB) []string {
	t.Helper()
	f, err := os.Open(p.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if m := connectLine.FindStringSubmatch(s.Text()); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// Log is the proxy's access log as it stands.
func (p *Proxy) Log(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(p.log)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
