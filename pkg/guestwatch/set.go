// Package guestwatch keeps, for every guest cluster with a FloatingIP, a watch through Rancher's
// cluster proxy of what serves its addresses: the Services kube-vip-cloud-provider handles (label
// implementation=kube-vip, every namespace) and, where the operator installs kube-vip, the
// DaemonSets of kube-vip's namespace it judges (its own kube-vip, or the original operator's of the
// same release). A guest pass reads what serves from the watch's state, with no request (but for
// the pods of a kube-vip that has none ready), and a change that matters to the cluster's addresses
// queues a pass soon, so that a FloatingIP's Served condition follows the guest within seconds,
// not at operateGuestClusterInterval.
//
// What is kept is small and bounded whatever the guest holds: per Service only its addresses (at
// most kubevipconfig.MaxServiceAddresses of each kind), at most kubevipconfig.MaxServices of them;
// per DaemonSet its counts. Every event is bounded in bytes and JSON values (pkg/guest), and the
// passes a guest can queue are at most one every Debounce.
package guestwatch

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
)

// Options tune the watches.
type Options struct {
	// Changed queues a pass of the guest cluster key: something it judges changed.
	Changed func(key string)
	// Open counts the watch requests open (kubefipoperator_guestcluster_watches); nil: none.
	Open prometheus.Gauge
	// Timeout bounds each request that is not a watch (the lists a watch starts from, the pods).
	Timeout time.Duration
	// Debounce is the least time between two passes a watch queues for one cluster.
	Debounce time.Duration
	// WatchTimeout is the longest a watch request runs before it is renewed; each asks for a
	// random time between three quarters of it and all of it, so that the renewals of many guests
	// spread out.
	WatchTimeout time.Duration
	// Backoff is the first wait after a failure, doubled up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
}

// Defaults for Options.
const (
	DefaultDebounce = 3 * time.Second
	// DefaultWatchTimeout keeps every watch request under the idle read timeout of 1800 s that
	// Rancher's chart gives its ingress (rancher/rancher chart/templates/ingate/ingress.yaml,
	// nginx.ingress.kubernetes.io/proxy-read-timeout, read at commit 59bd052e), even without a
	// bookmark; Rancher's cluster proxy itself (pkg/clusterrouter/proxy, the same commit) forwards
	// a watch with apimachinery's UpgradeAwareHandler over a transport with no timeout, flushing
	// as the guest writes.
	DefaultWatchTimeout = 25 * time.Minute
	DefaultBackoff      = time.Second
	DefaultMaxBackoff   = 5 * time.Minute
)

// Set holds the watches of every guest cluster; all end when its context ends.
type Set struct {
	ctx  context.Context
	opts Options
	mu   sync.Mutex
	by   map[string]*clusterWatch
}

// New starts an empty Set whose watches live at most as long as ctx.
func New(ctx context.Context, opts Options) *Set {
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.WatchTimeout <= 0 {
		opts.WatchTimeout = DefaultWatchTimeout
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.MaxBackoff < opts.Backoff {
		opts.MaxBackoff = max(DefaultMaxBackoff, opts.Backoff)
	}
	if opts.Changed == nil {
		opts.Changed = func(string) {}
	}
	return &Set{ctx: ctx, opts: opts, by: map[string]*clusterWatch{}}
}

// Target is a guest cluster as a pass reaches it.
type Target struct {
	// Key names the cluster's watch, and is what Changed is given: its management cluster.
	Key   string
	Guest guest.Target
	// Kubevip is the operator's kube-vip DaemonSet, nil where the operator installs none.
	Kubevip *kubevipconfig.KubevipRef
}

// Serving says what serves the addresses addrs of the guest t, from the cluster's watch: started
// with t's kubeconfig if none runs, or if it runs with another kubeconfig (a rotated token
// restarts it) or without t's kube-vip, or was refused; its first list waited for (while ctx allows, at most twice
// Timeout). From then on, a change of a Service that asks for or holds one of relevant, before or
// after the change, or of the kube-vip DaemonSet's counts, queues a pass.
func (s *Set) Serving(ctx context.Context, t Target, relevant, addrs []netip.Addr) (kubevipconfig.Serving, error) {
	w, err := s.ensure(t)
	if err != nil {
		return kubevipconfig.Serving{}, err
	}
	w.setRelevant(relevant)
	listed := false
	select {
	case <-w.tried:
		listed = true
	default:
	}
	wait := time.NewTimer(2 * s.opts.Timeout)
	defer wait.Stop()
	select {
	case <-w.tried:
	case <-ctx.Done():
		return kubevipconfig.Serving{}, fmt.Errorf("waiting for the first list of the guest's watch: %w", context.Cause(ctx))
	case <-wait.C:
		return kubevipconfig.Serving{}, fmt.Errorf("the guest's watch has not listed what serves its addresses within %s", 2*s.opts.Timeout)
	}
	return w.serving(ctx, t.Kubevip, addrs, listed)
}

// Stop ends the watch of the cluster key, if one runs: it has no FloatingIP left, or its pass could
// not reach it.
func (s *Set) Stop(key string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	w := s.by[key]
	delete(s.by, key)
	s.mu.Unlock()
	if w != nil {
		w.stop()
	}
}

// Running are the clusters whose watch runs.
func (s *Set) Running() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.by {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ensure returns the watch of t, started anew when none fits.
func (s *Set) ensure(t Target) (*clusterWatch, error) {
	fp := fingerprint(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ctx.Err(); err != nil {
		return nil, fmt.Errorf("the operator is stopping: %w", err)
	}
	if w := s.by[t.Key]; w != nil {
		// A look that asks nothing of kube-vip keeps a watch of it; one that asks of another
		// kube-vip than the watch's starts the watch anew.
		sameKubevip := t.Kubevip == nil || (w.kubevip != nil && *w.kubevip == *t.Kubevip)
		if w.fingerprint == fp && sameKubevip && !w.refused() {
			w.wake()
			return w, nil
		}
		w.stop()
		delete(s.by, t.Key)
	}
	client, err := guest.NewWatcher(t.Guest, s.opts.Timeout)
	if err != nil {
		return nil, err
	}
	w := start(s.ctx, s.opts, t, fp, client)
	s.by[t.Key] = w
	return w, nil
}

// fingerprint tells one kubeconfig of a target from another, without keeping the token.
func fingerprint(t Target) string {
	h := sha256.New()
	h.Write(t.Guest.Kubeconfig)
	for _, r := range t.Guest.Rancher {
		fmt.Fprintf(h, "\x00%s", r)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}
