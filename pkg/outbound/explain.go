package outbound

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
)

// ProxyError is a proxy's refusal of the tunnel to Target: its answer to CONNECT was Status.
type ProxyError struct {
	Proxy, Target, Status string
}

func (e *ProxyError) Error() string {
	return fmt.Sprintf("the proxy %s refused the connection to %s (%s): check the proxy's rules, and proxy and noProxy", e.Proxy, e.Target, e.Status)
}

// Explain says what to set of err, a call's failure, when a certificate or the proxy is the cause:
// a certificate of an authority not trusted names additionalTrustedCAs, a proxy that cannot be
// reached names proxy and noProxy. Any other error is returned as it is.
func Explain(err error) error {
	if err == nil {
		return nil
	}
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	var op *net.OpError
	var refused *ProxyError
	switch {
	case errors.As(err, &refused):
		// Says it already.
		return err
	case errors.As(err, &unknown):
		return &Hint{Err: err, Hint: "its certificate is signed by an authority the operator does not trust: add that CA to additionalTrustedCAs"}
	case errors.As(err, &invalid):
		return &Hint{Err: err, Hint: "its certificate is not valid (expired, or not for serving): renew it"}
	case errors.As(err, &host):
		return &Hint{Err: err, Hint: "its certificate is not for the host the operator reached: fix the address, or the certificate"}
	case errors.As(err, &op) && op.Op == "proxyconnect":
		return &Hint{Err: err, Hint: "the proxy cannot be reached: check proxy, and noProxy for hosts reached without it"}
	}
	return err
}

// Hint is an error with what to do about it.
type Hint struct {
	Err  error
	Hint string
}

func (h *Hint) Error() string { return h.Err.Error() + "; " + h.Hint }

func (h *Hint) Unwrap() error { return h.Err }
