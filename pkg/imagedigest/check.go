package imagedigest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kubefip/kube-fip-operator/pkg/outbound"
	"github.com/kubefip/kube-fip-operator/pkg/sharedread"
)

// Bounds of one check: its time, every response body it reads (a token, an error), and the size
// of the manifest the tag names, which every node of every guest would then pull.
const (
	DefaultTimeout = 10 * time.Second
	maxBody        = 1 << 20
	maxManifest    = 4 << 20
	// reuse is how long one answer serves every pass asking for the same image: a tag moved in the
	// registry is seen within it. A registry answers one manifest HEAD per image and operator in
	// that time, however many guests there are.
	reuse = 10 * time.Second
)

// Mismatch is a tag that names another manifest than the image's pinned digest.
type Mismatch struct {
	Image, Pinned, Found string
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("the registry's tag of %s names %s, not the pinned %s: the tag was moved", m.Image, m.Found, m.Pinned)
}

// Unresolved is a tag the registry did not answer for.
type Unresolved struct {
	Image string
	Err   error
}

func (u *Unresolved) Error() string {
	return fmt.Sprintf("the registry did not say which manifest the tag of %s names: %v", u.Image, u.Err)
}

func (u *Unresolved) Unwrap() error { return u.Err }

// Checker checks pinned images at their registries.
type Checker struct {
	plainHTTP bool
	timeout   time.Duration
	transport http.RoundTripper
	reads     *sharedread.Reads[string]
}

// New returns a Checker that reaches registries through network (its CAs and proxy); plainHTTP
// reaches them over http (a registry inside the network that serves no TLS), and timeout bounds
// each check (0: DefaultTimeout).
func New(network outbound.Network, plainHTTP bool, timeout time.Duration) *Checker {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Checker{plainHTTP: plainHTTP, timeout: timeout, transport: capped{base: network.Transport(timeout, timeout)},
		reads: sharedread.New[string](reuse, time.Now)}
}

// Check makes sure that image, repository:tag@sha256:<hex>, is what its registry's tag names now.
// It returns a *Mismatch or an *Unresolved otherwise; an image without a digest is an error, as
// there is nothing to hold the tag to.
func (c *Checker) Check(ctx context.Context, image string, creds DockerConfig) error {
	ref, pinned, ok := strings.Cut(image, "@")
	if !ok {
		return &Unresolved{Image: image, Err: errors.New("it is not pinned by a digest")}
	}
	opts := []name.Option{name.StrictValidation}
	if c.plainHTTP {
		opts = append(opts, name.Insecure)
	}
	tag, err := name.NewTag(ref, opts...)
	if err != nil {
		return &Unresolved{Image: image, Err: errors.New("it is not an image reference with a tag")}
	}
	found, err := c.reads.Get(tag.String(), func() (string, error) { return c.head(ctx, tag, creds) })
	if err != nil {
		return &Unresolved{Image: image, Err: err}
	}
	if found != pinned {
		return &Mismatch{Image: ref, Pinned: pinned, Found: found}
	}
	return nil
}

// head asks the registry for the digest of the manifest tag names, without its body.
func (c *Checker) head(ctx context.Context, tag name.Tag, creds DockerConfig) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	desc, err := remote.Head(tag, remote.WithContext(ctx), remote.WithTransport(c.transport),
		remote.WithAuth(creds.authFor(tag.RegistryStr())))
	if err != nil {
		return "", outbound.Explain(err)
	}
	if desc.Size > maxManifest {
		return "", fmt.Errorf("its manifest is %d bytes, over %d", desc.Size, maxManifest)
	}
	return desc.Digest.String(), nil
}

// capped bounds every response body read through it.
type capped struct{ base http.RoundTripper }

func (c capped) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err == nil && resp.Body != nil {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: maxBody}
	}
	return resp, err
}

type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// At the bound: the answer may end here, or go on past it.
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("the registry's answer is over %d bytes", maxBody)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
