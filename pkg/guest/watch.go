package guest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// What one event of a watch may make the operator hold. A watch is one answer that goes on for as
// long as it is asked to, so it is bounded event by event, not as a whole.
const (
	// MaxWatchEvent bounds the bytes of one event: an object the API server stores (about 1.5 MiB
	// at most) with room for its envelope.
	MaxWatchEvent = 2 << 20
	// MaxWatchEventValues bounds the JSON values of one event, as MaxGuestResponseValues bounds an
	// answer's.
	MaxWatchEventValues = MaxGuestResponseValues
)

// Watcher reaches one guest cluster for as long as a watch of it runs, apart from any pass: List
// reads (every request taking at most the timeout, every answer bounded as a pass's are), and
// Watch opens a watch, which no whole-request timeout ends and whose events are bounded one by one
// (MaxWatchEvent, MaxWatchEventValues).
type Watcher struct {
	// List reads the guest, as a pass's Client does, for the lists a watch starts from and the
	// reads it needs beside.
	List   *Client
	stream *Client
}

// NewWatcher builds a Watcher for the guest t; the kubeconfig is checked as NewClient checks it.
func NewWatcher(t Target, timeout time.Duration) (*Watcher, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	list, err := newClient(t, timeout, withPass(nil, MaxGuestResponse, MaxGuestResponseValues))
	if err != nil {
		return nil, err
	}
	stream, err := newClient(t, 0, withEvents(MaxWatchEvent, MaxWatchEventValues))
	if err != nil {
		return nil, err
	}
	return &Watcher{List: list, stream: stream}, nil
}

// WatchRequest is one watch: of resource in API group "" (core) or "apps", in namespace ("": all),
// of the objects matching labelSelector, from resourceVersion on, ending after timeout (whole
// seconds), with bookmarks.
type WatchRequest struct {
	Group, Resource, Namespace, LabelSelector, ResourceVersion string
	Timeout                                                    time.Duration
}

// Watch opens the watch r; its events are read from the stream, one JSON value each, until the API
// server ends it or ctx ends. A refusal is the API server's error as client-go reads it
// (apierrors.IsGone, IsUnauthorized, ...).
func (w *Watcher) Watch(ctx context.Context, r WatchRequest) (io.ReadCloser, error) {
	client := w.stream.Core.RESTClient()
	if r.Group == "apps" {
		client = w.stream.Apps.RESTClient()
	}
	req := client.Get().Namespace(r.Namespace).Resource(r.Resource).
		Param("watch", "true").Param("allowWatchBookmarks", "true").
		Param("timeoutSeconds", strconv.FormatInt(int64(r.Timeout/time.Second), 10))
	if r.LabelSelector != "" {
		req = req.Param("labelSelector", r.LabelSelector)
	}
	if r.ResourceVersion != "" {
		req = req.Param("resourceVersion", r.ResourceVersion)
	}
	body, err := req.Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("watching the guest's %s: %w", r.Resource, err)
	}
	return body, nil
}

// Credentials are the secrets of the Watcher's kubeconfig (see Client.Credentials).
func (w *Watcher) Credentials() []string { return w.List.Credentials() }

// eventTransport refuses what passTransport refuses (a redirect, an answer in another form than
// JSON) and bounds each event of an answer instead of the whole answer.
type eventTransport struct {
	bytes, values int
	base          http.RoundTripper
}

func withEvents(bytes, values int) func(http.RoundTripper) http.RoundTripper {
	return func(base http.RoundTripper) http.RoundTripper {
		return &eventTransport{bytes: bytes, values: values, base: base}
	}
}

func (t *eventTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	json, err := acceptAnswer(resp)
	if err != nil {
		resp.Body.Close()
		return nil, err
	}
	if json {
		resp.Body = LimitEvents(resp.Body, t.bytes, t.values, ErrGuestResponseTooLarge)
	} else if err := CapBody(resp, MaxGuestResponse, ErrGuestResponseTooLarge, nil); err != nil {
		return nil, err
	}
	return resp, nil
}
