package rig

import (
	"net"
	"testing"
)

// FreePort returns a loopback port nothing listens on right now, for a process under test to
// serve on.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
