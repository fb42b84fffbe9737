package guest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
)

// What one answer from a guest cluster may make the operator hold. A guest is untrusted: a list
// of planted objects, or an object of a million empty ones, must fail, not take the operator's
// memory.
const (
	// MaxGuestResponse bounds the body of one answer. An API server stores no object larger than
	// about 1.5 MiB (etcd's request limit); the largest answer the operator needs is one page of
	// one release's records (ReleaseRecordPage in pkg/helminstall), which for the charts the
	// operator installs is well under 100 KiB.
	MaxGuestResponse = 4 << 20
	// MaxGuestResponseValues bounds the JSON values of one answer, counted as its objects,
	// arrays and commas (see LimitValues). Decoded, a value can take far more room than its
	// text: "{}," is 3 bytes, but as a container of a Pod template it is 408, so it is the
	// values that bound what the operator holds of an answer, not its bytes. An answer the
	// operator needs counts a few hundred: kube-vip's DaemonSet as the API server gives it back,
	// managed fields included, 268; a page of release records, about 250.
	MaxGuestResponseValues = 1 << 14
)

// ErrGuestResponseTooLarge means a guest answered with more than MaxGuestResponse bytes or
// MaxGuestResponseValues JSON values.
var ErrGuestResponseTooLarge = errors.New("the guest cluster answered with more than the operator reads")

// ErrGuestResponseNotJSON means a guest answered a request with something else than JSON, the only
// form the operator asks for; another (protobuf) would be decoded without the value budget.
var ErrGuestResponseNotJSON = errors.New("the guest cluster answered with something else than JSON")

// ErrGuestRedirect means a guest answered with a redirect. The cluster proxy never redirects an API
// request, and a guest is untrusted: following it would send the operator's request, and what it
// reads back, wherever the guest says.
var ErrGuestRedirect = errors.New("the guest cluster answered with a redirect, which the operator does not follow")

// passTransport carries the deadline of one pass into every request of a guest client, Helm's
// included (its storage driver takes no context), bounds each answer's body in bytes and JSON
// values, refuses an answer in another form than JSON (an error may also be plain text, as
// Rancher's proxy writes some) and refuses every redirect (the HTTP client would otherwise follow
// it).
type passTransport struct {
	ctx    context.Context
	max    int64
	values int
	base   http.RoundTripper
}

// withPass wraps base for the pass ctx; a nil ctx bounds the bodies only.
func withPass(ctx context.Context, max int64, values int) func(http.RoundTripper) http.RoundTripper {
	return func(base http.RoundTripper) http.RoundTripper {
		return &passTransport{ctx: ctx, max: max, values: values, base: base}
	}
}

func (t *passTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	release := func() {}
	if t.ctx != nil {
		if err := t.ctx.Err(); err != nil {
			return nil, fmt.Errorf("the guest pass is over: %w", context.Cause(t.ctx))
		}
		// The request ends with its own context or with the pass, whichever ends first.
		ctx, cancel := context.WithCancelCause(req.Context())
		stop := context.AfterFunc(t.ctx, func() { cancel(context.Cause(t.ctx)) })
		release = func() { stop(); cancel(nil) }
		req = req.WithContext(ctx)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		release()
		return nil, err
	}
	json, err := acceptAnswer(resp)
	if err != nil {
		resp.Body.Close()
		release()
		return nil, err
	}
	if err := CapBody(resp, t.max, ErrGuestResponseTooLarge, release); err != nil {
		return nil, err
	}
	if json {
		resp.Body = LimitValues(resp.Body, t.values, ErrGuestResponseTooLarge)
	}
	return resp, nil
}

// acceptAnswer refuses a redirect and an answer in another form than JSON (an error may also be
// plain text, as Rancher's proxy writes some); it says whether the answer is JSON.
func acceptAnswer(resp *http.Response) (bool, error) {
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return false, fmt.Errorf("%w (%d)", ErrGuestRedirect, resp.StatusCode)
	}
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	json := media == "application/json"
	empty := resp.ContentLength == 0
	if !json && !empty && (resp.StatusCode < 300 || (media != "" && media != "text/plain")) {
		return false, fmt.Errorf("%w (%d, %.64q)", ErrGuestResponseNotJSON, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return json, nil
}

// CapBody bounds resp's body at max bytes, for the guest and the chart transports alike: an
// announced length over max fails at once, and reading past max fails with tooLarge rather than
// ending quietly, so that a cut list, index or archive is never taken for a whole one. release,
// when set, runs once: at the failure, or when the body is closed.
func CapBody(resp *http.Response, max int64, tooLarge error, release func()) error {
	if release == nil {
		release = func() {}
	}
	if resp.ContentLength > max {
		resp.Body.Close()
		release()
		return fmt.Errorf("%w (%d bytes announced, at most %d)", tooLarge, resp.ContentLength, max)
	}
	resp.Body = &cappedBody{body: resp.Body, left: max, err: fmt.Errorf("%w (more than %d bytes)", tooLarge, max), release: release}
	return nil
}

// cappedBody is a body that fails with err once more than its limit has been read.
type cappedBody struct {
	body    io.ReadCloser
	left    int64
	err     error
	release func()
	once    sync.Once
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, b.err
	}
	return n, err
}

func (b *cappedBody) Close() error {
	err := b.body.Close()
	b.once.Do(b.release)
	return err
}
