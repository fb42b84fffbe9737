package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"
)

// Server serves /metrics, /healthz and /readyz. The port can change while it runs (the metricsPort
// option is reloaded live): the listener moves to the new port without a restart.
type Server struct {
	metrics *Metrics
	ready   atomic.Bool
	ports   chan int
	bind    string
	// also, when set before Run, must report ready too: the admission webhook serving.
	also func() (bool, string)
}

// NewServer creates a server for m listening on bind (an address without port, "" for all
// interfaces). It is not ready until SetReady(true).
func NewServer(m *Metrics, bind string) *Server {
	return &Server{metrics: m, ports: make(chan int, 1), bind: bind}
}

// SetReady marks the operator ready (caches synced) or not.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// AlsoReadyWhen makes /readyz wait for check as well, which says why when it is not ready. It is
// set before Run.
func (s *Server) AlsoReadyWhen(check func() (bool, string)) { s.also = check }

// SetPort asks the server to listen on port; the latest request wins.
func (s *Server) SetPort(port int) {
	for {
		select {
		case s.ports <- port:
			return
		default:
			select {
			case <-s.ports:
			default:
			}
		}
	}
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.Gatherer(), promhttp.HandlerOpts{Registry: s.metrics.Registry}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "caches not synced yet", http.StatusServiceUnavailable)
			return
		}
		if s.also != nil {
			if ok, why := s.also(); !ok {
				http.Error(w, why, http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

// Run serves until ctx ends, moving to a new port whenever SetPort asks for one. A port that
// cannot be bound is logged and retried when the next port arrives.
func (s *Server) Run(ctx context.Context) {
	var current *http.Server
	port := 0
	stop := func() {
		if current == nil {
			return
		}
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = current.Shutdown(shutdownCtx)
		current = nil
	}
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case next := <-s.ports:
			if next == port && current != nil {
				continue
			}
			stop()
			port = next
			srv, err := s.listen(port)
			if err != nil {
				logrus.Errorf("metrics server: %v", err)
				continue
			}
			current = srv
		}
	}
}

func (s *Server) listen(port int) (*http.Server, error) {
	addr := net.JoinHostPort(s.bind, fmt.Sprint(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logrus.Errorf("metrics server on %s stopped: %v", addr, err)
		}
	}()
	logrus.Infof("serving /metrics, /healthz and /readyz on %s", addr)
	return srv, nil
}
