// Package profiling serves the Go runtime's profiles (net/http/pprof) at an address an
// administrator names, for finding where the operator's time and memory go. It is off unless
// asked for, and serves nothing but the profiles.
package profiling

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"

	"github.com/sirupsen/logrus"
)

// BlockProfileRate samples one blocking event per this many nanoseconds blocked, and
// MutexProfileFraction one in this many mutex contentions: enough to see where workers wait
// without slowing them.
const (
	BlockProfileRate     = int(100 * time.Microsecond)
	MutexProfileFraction = 100
)

// Serve serves the profiles at addr (host:port) until ctx ends. Blocking and mutex profiling
// are turned on for the life of the process.
func Serve(ctx context.Context, addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("profiling address %s: %w", addr, err)
	}
	runtime.SetBlockProfileRate(BlockProfileRate)
	runtime.SetMutexProfileFraction(MutexProfileFraction)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	logrus.Infof("serving Go profiles at http://%s/debug/pprof/", l.Addr())
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
