package guestwatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// stream is one watched resource of a guest: how it is listed and watched, and how an event
// changes the state.
type stream struct {
	// what names the resource in messages.
	what    string
	request guest.WatchRequest
	// relist replaces the stream's part of the state with a list, and returns its resourceVersion;
	// with notify, a pass is queued if the list is not the first (a pass asked for none).
	relist func(ctx context.Context, notify bool) (string, error)
	// apply changes the state by one event's object; it returns the object's resourceVersion.
	apply func(eventType string, object json.RawMessage) (string, error)
	wake  chan struct{}

	// Guarded by the clusterWatch's mu: synced says the state holds the last list and what
	// followed it; tried that a first list was tried; err the last list's failure; refused the
	// guest's refusal (401, 403) that stopped the stream. relistWanted says a pass asked for a
	// list (relistNow), endWatch ends the watch request under way, and listDone is closed, and
	// replaced, when a list ends.
	synced, tried bool
	err, refused  error
	relistWanted  bool
	endWatch      context.CancelFunc
	listDone      chan struct{}
}

// run lists and watches st until ctx ends or the guest refuses the token: a watch request resumes
// from the last resourceVersion seen (an event's or a bookmark's), a resourceVersion the guest no
// longer has (410) is followed by a list, and a failure by a wait of Backoff, doubled up to
// MaxBackoff, or until a pass reaches the guest.
func (w *clusterWatch) run(ctx context.Context, st *stream) {
	backoff := w.opts.Backoff
	rv := ""
	for ctx.Err() == nil {
		asked := w.takeRelist(st)
		if asked {
			rv = ""
		}
		if rv == "" {
			next, err := st.relist(ctx, !asked)
			if refusal(err) {
				w.refuse(st, err)
				return
			}
			w.listed(st, err)
			if err != nil {
				w.debugf("listing the guest's %s: %v", st.what, err)
				if !w.sleep(ctx, st, &backoff) {
					return
				}
				continue
			}
			rv = next
		}
		opened := time.Now()
		next, err := w.watchOnce(ctx, st, rv)
		rv = next
		switch {
		case ctx.Err() != nil:
			return
		case w.relistAsked(st):
			// A pass asked for a list, which ended the watch request: listed at once.
		case refusal(err):
			w.refuse(st, err)
			return
		case gone(err) || errors.Is(err, guest.ErrGuestResponseTooLarge):
			// A resourceVersion too old, or an event too large to read: what was missed is
			// listed, within the list's own bounds.
			w.debugf("watching the guest's %s: %v; listing them again", st.what, err)
			rv = ""
			if time.Since(opened) < time.Second && !w.sleep(ctx, st, &backoff) {
				return
			}
		case err != nil:
			w.debugf("watching the guest's %s: %v", st.what, err)
			if !w.sleep(ctx, st, &backoff) {
				return
			}
		case time.Since(opened) < time.Second:
			// A guest that ends every watch at once is not asked again at once.
			if !w.sleep(ctx, st, &backoff) {
				return
			}
		default:
			backoff = w.opts.Backoff
		}
	}
}

// watchOnce runs one watch request from rv, and returns the last resourceVersion it saw.
func (w *clusterWatch) watchOnce(ctx context.Context, st *stream, rv string) (string, error) {
	req := st.request
	req.ResourceVersion = rv
	req.Timeout = jitter(w.opts.WatchTimeout)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.mu.Lock()
	st.endWatch = cancel
	wanted := st.relistWanted
	w.mu.Unlock()
	if wanted {
		return rv, nil
	}
	body, err := w.client.Watch(ctx, req)
	if err != nil {
		return rv, err
	}
	defer body.Close()
	if w.opts.Open != nil {
		w.opts.Open.Inc()
		defer w.opts.Open.Dec()
	}
	dec := json.NewDecoder(body)
	for {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				return rv, nil
			}
			return rv, fmt.Errorf("reading the watch of the guest's %s: %w", st.what, err)
		}
		switch ev.Type {
		case "ADDED", "MODIFIED", "DELETED":
			next, err := st.apply(ev.Type, ev.Object)
			if err != nil {
				return rv, fmt.Errorf("reading an event of the guest's %s: %w", st.what, err)
			}
			if next != "" {
				rv = next
			}
		case "BOOKMARK":
			var m metav1.PartialObjectMetadata
			if json.Unmarshal(ev.Object, &m) == nil && m.ResourceVersion != "" {
				rv = m.ResourceVersion
			}
		case "ERROR":
			var status metav1.Status
			if err := json.Unmarshal(ev.Object, &status); err != nil {
				return rv, fmt.Errorf("reading an error of the watch of the guest's %s: %w", st.what, err)
			}
			return rv, &apierrors.StatusError{ErrStatus: status}
		default:
			return rv, fmt.Errorf("the watch of the guest's %s sent an event of unknown type %s", st.what, redact.Quote(ev.Type, 32))
		}
	}
}

// relistNow asks st for a list, ending its watch request or its wait, and returns what is closed
// once a list has ended.
func (w *clusterWatch) relistNow(st *stream) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	st.relistWanted = true
	if st.endWatch != nil {
		st.endWatch()
	}
	select {
	case st.wake <- struct{}{}:
	default:
	}
	return st.listDone
}

// relistAsked says a pass asked st for a list that has not started yet.
func (w *clusterWatch) relistAsked(st *stream) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return st.relistWanted
}

// takeRelist says a pass asked st for a list, and takes the request: the list starts now.
func (w *clusterWatch) takeRelist(st *stream) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	asked := st.relistWanted
	st.relistWanted = false
	return asked
}

// sleep waits backoff, give or take a fifth, and doubles it up to MaxBackoff; a pass that reaches
// the guest ends the wait. False when ctx ended.
func (w *clusterWatch) sleep(ctx context.Context, st *stream, backoff *time.Duration) bool {
	t := time.NewTimer(*backoff * time.Duration(80+rand.IntN(41)) / 100)
	defer t.Stop()
	*backoff = min(2**backoff, w.opts.MaxBackoff)
	select {
	case <-ctx.Done():
		return false
	case <-st.wake:
		*backoff = w.opts.Backoff
	case <-t.C:
	}
	return true
}

// refuse stops st for the guest's refusal err, until a pass starts the watch anew.
func (w *clusterWatch) refuse(st *stream, err error) {
	w.debugf("the guest refused the watch of its %s: %v; watched again from the next pass", st.what, err)
	w.mu.Lock()
	st.refused = err
	w.mu.Unlock()
	w.listed(st, err)
}

// debugf logs a watch's trouble, the kubeconfig's credentials masked.
func (w *clusterWatch) debugf(format string, args ...any) {
	logrus.Debugf("guest cluster %s: %s", w.key, redact.Text(fmt.Sprintf(format, args...), w.client.Credentials()...))
}

// jitter is a watch request's timeout: between three quarters of d and d, in whole seconds.
func jitter(d time.Duration) time.Duration {
	quarter := int64(d / 4)
	if quarter <= 0 {
		return max(d, time.Second).Truncate(time.Second)
	}
	return max(d-time.Duration(rand.Int64N(quarter)), time.Second).Truncate(time.Second)
}

// refusal says the guest refused the kubeconfig's token or its user (401, 403).
func refusal(err error) bool {
	return err != nil && (apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err))
}

// gone says the guest no longer has the resourceVersion a watch asked for (410).
func gone(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
		return true
	}
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code == http.StatusGone
}
