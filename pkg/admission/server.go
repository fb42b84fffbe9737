package admission

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// maxReviewBytes bounds an AdmissionReview read: the object and the old object, each at most the
// API server's 1.5 MiB object limit, with room for the request around them.
const maxReviewBytes = 4 << 20

// Server serves the validator over TLS with the certificate Certs keeps.
type Server struct {
	addr    string
	certs   *Certs
	handler http.Handler
	serving atomic.Bool
}

// Ready reports whether the server is serving with a certificate the webhook configuration
// trusts, and why not: a replica is not Ready (no Service endpoint) before.
func (s *Server) Ready() (bool, string) {
	if !s.serving.Load() {
		return false, "the admission webhook is not serving yet"
	}
	return true, ""
}

// NewServer returns a server of v on bind:port (every interface when bind is empty).
func NewServer(bind string, port int, certs *Certs, v *Validator) *Server {
	mux := http.NewServeMux()
	h := v.Handler()
	mux.HandleFunc(Path, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxReviewBytes)
		h.ServeHTTP(w, r)
	})
	return &Server{addr: net.JoinHostPort(bind, strconv.Itoa(port)), certs: certs, handler: mux}
}

// Run serves once a first sync of the certificate and the webhook configuration's caBundle
// succeeded, and keeps them (Certs.Run), until ctx ends. A failure to listen is returned; a sync
// that fails is retried.
func (s *Server) Run(ctx context.Context) error {
	for delay := 200 * time.Millisecond; ; delay = min(2*delay, 10*time.Second) {
		err := s.certs.Sync(ctx)
		if err == nil {
			break
		}
		logrus.Warnf("admission webhook certificate: %v", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
	go s.certs.Run(ctx)
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		MaxHeaderBytes:    64 << 10,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.certs.GetCertificate},
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	logrus.Infof("admission webhook serving on %s%s", s.addr, Path)
	s.serving.Store(true)
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
