package guestwatch

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
)

// clusterWatch is the watch of one guest cluster: its streams (the Services, and the kube-vip
// DaemonSets where the operator installs kube-vip) and the state they keep.
type clusterWatch struct {
	key, fingerprint string
	opts             Options
	client           *guest.Watcher
	kubevip          *kubevipconfig.KubevipRef
	cancel           context.CancelFunc
	// tried is closed once every stream has listed, or failed to, once.
	tried chan struct{}

	mu sync.Mutex
	// services are the kube-vip LoadBalancer Services by namespace/name, with every address each
	// asks for and holds; limited says what kept them from being all of them.
	services map[string]kubevipconfig.ServiceState
	limited  string
	// daemonSets are the DaemonSets of kube-vip's namespace the judgement may read, by name.
	daemonSets map[string]kubevipconfig.DaemonSetStatus
	// streams are the streams' states.
	streams []*stream
	// relevant are the addresses the cluster's last pass asked about: a change of a Service that
	// names one of them queues a pass.
	relevant []netip.Addr
	// lastQueued is when the watch last queued a pass; timer, when set, queues the next.
	lastQueued time.Time
	timer      *time.Timer
	stopped    bool
}

// start starts the watch of t with client.
func start(parent context.Context, opts Options, t Target, fp string, client *guest.Watcher) *clusterWatch {
	ctx, cancel := context.WithCancel(parent)
	w := &clusterWatch{key: t.Key, fingerprint: fp, opts: opts, client: client, cancel: cancel, tried: make(chan struct{}),
		services: map[string]kubevipconfig.ServiceState{}, daemonSets: map[string]kubevipconfig.DaemonSetStatus{}}
	w.streams = append(w.streams, w.servicesStream())
	if t.Kubevip != nil {
		ref := *t.Kubevip
		w.kubevip = &ref
		w.streams = append(w.streams, w.daemonSetsStream(ref))
	}
	for _, st := range w.streams {
		st.listDone = make(chan struct{})
		go w.run(ctx, st)
	}
	return w
}

// stop ends the watch; no pass is queued by it any more.
func (w *clusterWatch) stop() {
	w.cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

// refused says whether a stream stopped because the guest refused the kubeconfig's token (401,
// 403): a pass starts the watch anew.
func (w *clusterWatch) refused() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, st := range w.streams {
		if st.refused != nil {
			return true
		}
	}
	return false
}

// wake ends the wait of every stream that waits after a failure: a pass just reached the guest.
func (w *clusterWatch) wake() {
	for _, st := range w.streams {
		select {
		case st.wake <- struct{}{}:
		default:
		}
	}
}

func (w *clusterWatch) setRelevant(addrs []netip.Addr) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.relevant = slices.Clone(addrs)
}

// listed notes that st listed (err nil) or failed to; the first time every stream has, tried
// closes.
func (w *clusterWatch) listed(st *stream, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// A list that fails leaves the state as it was, but no longer known to be the guest's.
	st.err, st.synced = err, err == nil
	close(st.listDone)
	st.listDone = make(chan struct{})
	if st.tried {
		return
	}
	st.tried = true
	for _, s := range w.streams {
		if !s.tried {
			return
		}
	}
	close(w.tried)
}

// serving judges addrs from the state, with the kube-vip DaemonSet ref names (none when nil), and
// reads why kube-vip has no ready pod if it has none. A
// state cut short by a limit is listed anew first, as every pass listed the Services before they
// were watched: what a limit hid may have gone. listed says the watch had listed before this pass.
func (w *clusterWatch) serving(ctx context.Context, ref *kubevipconfig.KubevipRef, addrs []netip.Addr, listed bool) (kubevipconfig.Serving, error) {
	w.mu.Lock()
	limited := w.limited != ""
	w.mu.Unlock()
	if limited && listed {
		select {
		case <-w.relistNow(w.streams[0]):
		case <-ctx.Done():
			return kubevipconfig.Serving{}, fmt.Errorf("listing the guest's kube-vip Services: %w", context.Cause(ctx))
		}
	}
	w.mu.Lock()
	for _, st := range w.streams {
		if !st.synced {
			err := st.err
			if st.refused != nil {
				err = st.refused
			}
			w.mu.Unlock()
			return kubevipconfig.Serving{}, err
		}
	}
	services := make([]kubevipconfig.ServiceState, 0, len(w.services))
	for _, s := range w.services {
		services = append(services, s)
	}
	limitedBy := w.limited
	var kubevip *kubevipconfig.DaemonSetState
	var ds kubevipconfig.DaemonSetStatus
	if ref != nil {
		kubevip, ds = kubevipconfig.KubevipState(*ref, func(name string) (kubevipconfig.DaemonSetStatus, bool) {
			d, ok := w.daemonSets[name]
			return d, ok
		})
	}
	w.mu.Unlock()
	if kubevip.NeedsWhy() {
		kubevip.Why = kubevipconfig.WhyNotReady(ctx, w.client.List.Core, kubevip.Namespace, ds.Selector)
	}
	return kubevipconfig.ServingOf(kubevip, services, limitedBy, addrs), nil
}

// changed queues a pass of the cluster, at once if the watch queued none within Debounce, else
// when Debounce has passed since: a burst of changes queues one pass, or two.
func (w *clusterWatch) changed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil || w.stopped {
		return
	}
	wait := max(w.opts.Debounce-time.Since(w.lastQueued), 0)
	w.timer = time.AfterFunc(wait, func() {
		w.mu.Lock()
		w.timer = nil
		w.lastQueued = time.Now()
		stopped := w.stopped
		w.mu.Unlock()
		if !stopped {
			w.opts.Changed(w.key)
		}
	})
}

// names says whether s asks for or holds one of the relevant addresses; w.mu is held.
func (w *clusterWatch) names(s kubevipconfig.ServiceState) bool {
	for _, a := range slices.Concat(s.Asks, s.Holds) {
		if slices.Contains(w.relevant, a) {
			return true
		}
	}
	return false
}

// tooMany is the limit the watch reaches with more than MaxServices Services.
func tooMany() string {
	return fmt.Sprintf("the guest has more than %d kube-vip Services: only %d are watched", kubevipconfig.MaxServices, kubevipconfig.MaxServices)
}
