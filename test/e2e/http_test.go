package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/kubefip/kube-fip-operator/test/rig/node"
)

// getIn asks rawURL from network namespace ns: the connection is opened on a thread there (an
// http.Client would dial from another thread, in the host's namespace), and the request written
// and the response read over it.
func getIn(ns, rawURL string) (string, error) { return getAs(ns, rawURL, "") }

// getAs is getIn with the request's Host header host, when not empty, instead of rawURL's.
func getAs(ns, rawURL, host string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	var conn net.Conn
	if err := node.In(ns, func() error {
		var err error
		conn, err = net.DialTimeout("tcp", addr, 3*time.Second)
		return err
	}); err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		return "", err
	}
	req.Close = true
	if host != "" {
		req.Host = host
	}
	if err := req.Write(conn); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(data), fmt.Errorf("%s answered %s", rawURL, resp.Status)
	}
	return string(data), nil
}
