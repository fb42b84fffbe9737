package guest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// MaxGuestResponse bounds the body of one answer from a guest cluster. A guest is untrusted: a
// list of planted objects must fail, not take the operator's memory. The largest answer the
// operator needs is a list of one release's records, which the release driver bounds at
// MaxReleaseRecords records of at most MaxReleaseRecord each; a real release stays far below.
const MaxGuestResponse = 32 << 20

// ErrGuestResponseTooLarge means a guest answered with more than MaxGuestResponse bytes.
var ErrGuestResponseTooLarge = errors.New("the guest cluster answered with more than the operator reads")

// ErrGuestRedirect means a guest answered with a redirect. The cluster proxy never redirects an API
// request, and a guest is untrusted: following it would send the operator's request, and what it
// reads back, wherever the guest says.
var ErrGuestRedirect = errors.New("the guest cluster answered with a redirect, which the operator does not follow")

// passTransport carries the deadline of one pass into every request of a guest client, Helm's
// included (its storage driver takes no context), bounds each answer's body and refuses every
// redirect (the HTTP client would otherwise follow it).
type passTransport struct {
	ctx  context.Context
	max  int64
	base http.RoundTripper
}

// withPass wraps base for the pass ctx; a nil ctx bounds the bodies only.
func withPass(ctx context.Context, max int64) func(http.RoundTripper) http.RoundTripper {
	return func(base http.RoundTripper) http.RoundTripper {
		return &passTransport{ctx: ctx, max: max, base: base}
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
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		resp.Body.Close()
		release()
		return nil, fmt.Errorf("%w (%d)", ErrGuestRedirect, resp.StatusCode)
	}
	if err := CapBody(resp, t.max, ErrGuestResponseTooLarge, release); err != nil {
		return nil, err
	}
	return resp, nil
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
