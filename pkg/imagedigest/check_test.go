package imagedigest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kubefip/kube-fip-operator/pkg/outbound"
	"github.com/kubefip/kube-fip-operator/pkg/sharedread"
)

// testRegistry is an in-memory registry; with user set, every request needs it and password. It
// counts the manifest requests it serves.
type testRegistry struct {
	*httptest.Server
	manifests atomic.Int64
}

func newTestRegistry(t *testing.T, user, password string) *testRegistry {
	t.Helper()
	r := &testRegistry{}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if user != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != user || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
		}
		if strings.Contains(req.URL.Path, "/manifests/") {
			r.manifests.Add(1)
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

// push writes a random image as repo:tag and returns its digest.
func (r *testRegistry) push(t *testing.T, repo, tag string, opts ...remote.Option) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(strings.TrimPrefix(r.URL, "http://") + "/" + repo + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, opts...); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func (r *testRegistry) host() string { return strings.TrimPrefix(r.URL, "http://") }

// TestATagHeldToItsDigest: the image pinned to what its tag names passes; the same tag pushed
// again with other content is a Mismatch, seen once the answer's reuse is over; a tag the registry
// does not have, or an image without a digest, is Unresolved. One read serves the passes that ask
// within the reuse period.
func TestATagHeldToItsDigest(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t, "", "")
	first := r.push(t, "kube-vip/kube-vip", "v1.0.0")
	now := time.Unix(1000, 0)
	c := New(outbound.Network{}, false, time.Second)
	c.reads = sharedread.New[string](reuse, func() time.Time { return now })
	ctx := context.Background()
	image := r.host() + "/kube-vip/kube-vip:v1.0.0@" + first
	r.manifests.Store(0) // the push's own
	for i := 0; i < 5; i++ {
		if err := c.Check(ctx, image, DockerConfig{}); err != nil {
			t.Fatalf("the pinned image: %v", err)
		}
	}
	if n := r.manifests.Load(); n != 1 {
		t.Errorf("five checks within %s asked the registry %d times; want once", reuse, n)
	}
	moved := r.push(t, "kube-vip/kube-vip", "v1.0.0")
	if err := c.Check(ctx, image, DockerConfig{}); err != nil {
		t.Errorf("within the reuse period the earlier answer serves: %v", err)
	}
	now = now.Add(reuse)
	var m *Mismatch
	err := c.Check(ctx, image, DockerConfig{})
	if !errors.As(err, &m) || m.Found != moved || m.Pinned != first || !strings.Contains(err.Error(), "moved") {
		t.Errorf("the moved tag: %v; want a Mismatch naming %s", err, moved)
	}
	var u *Unresolved
	for _, bad := range []string{r.host() + "/kube-vip/kube-vip:v9.9.9@" + first, r.host() + "/kube-vip/kube-vip:v1.0.0", "Not An Image@" + first} {
		if err := c.Check(ctx, bad, DockerConfig{}); !errors.As(err, &u) {
			t.Errorf("%s: %v; want Unresolved", bad, err)
		}
	}
}

// TestCredentialsOnlyForTheirRegistry: a registry that wants credentials gets those of its host
// from the Docker config and answers; without them it does not, and no message holds them.
func TestCredentialsOnlyForTheirRegistry(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t, "mirror", "S3CRET-pass")
	digest := r.push(t, "kubevip/kube-vip-cloud-provider", "v0.0.12", remote.WithAuth(basic("mirror", "S3CRET-pass")))
	image := r.host() + "/kubevip/kube-vip-cloud-provider:v0.0.12@" + digest
	auth := base64.StdEncoding.EncodeToString([]byte("mirror:S3CRET-pass"))
	for _, cfg := range []string{
		fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, r.host(), auth),
		fmt.Sprintf(`{"auths":{"https://%s/v1/":{"username":"mirror","password":"S3CRET-pass"}}}`, r.host()),
	} {
		d, err := ParseDockerConfig([]byte(cfg))
		if err != nil {
			t.Fatal(err)
		}
		if err := New(outbound.Network{}, false, time.Second).Check(context.Background(), image, d); err != nil {
			t.Errorf("with the registry's credentials: %v", err)
		}
		if s := strings.Join(d.Secrets(), " "); !strings.Contains(s, "S3CRET-pass") || !strings.Contains(s, auth) {
			t.Errorf("the secrets to mask %q lack the password or its auth form", s)
		}
	}
	other, _ := ParseDockerConfig([]byte(`{"auths":{"registry.other.example":{"username":"mirror","password":"S3CRET-pass"}}}`))
	err := New(outbound.Network{}, false, time.Second).Check(context.Background(), image, other)
	var u *Unresolved
	if !errors.As(err, &u) || strings.Contains(err.Error(), "S3CRET") {
		t.Errorf("with another registry's credentials: %v; want Unresolved, without the password", err)
	}
	for _, bad := range []string{`not json`, `{"auths":{"x":{"auth":"not base64!"}}}`, `{}`, `{"auths":` + strings.Repeat(" ", MaxDockerConfig) + `{}}`} {
		if _, err := ParseDockerConfig([]byte(bad)); err == nil || strings.Contains(err.Error(), "base64!") {
			t.Errorf("%.40q: %v; want refused without repeating it", bad, err)
		}
	}
}

// TestACheckIsBounded: a registry that does not answer costs the check its timeout, and one that
// announces a huge manifest is not believed.
func TestACheckIsBounded(t *testing.T) {
	t.Parallel()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/v2/" {
			return
		}
		select {
		case <-req.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer slow.Close()
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/v2/" {
			return
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
		w.Header().Set("Docker-Content-Digest", "sha256:"+strings.Repeat("a", 64))
		w.Header().Set("Content-Length", fmt.Sprint(maxManifest+1))
	}))
	defer huge.Close()
	pin := "@sha256:" + strings.Repeat("a", 64)
	began := time.Now()
	var u *Unresolved
	if err := New(outbound.Network{}, false, 300*time.Millisecond).Check(context.Background(), strings.TrimPrefix(slow.URL, "http://")+"/k/k:v1"+pin, DockerConfig{}); !errors.As(err, &u) {
		t.Errorf("a registry that does not answer: %v; want Unresolved", err)
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("the check took %s with a timeout of 300ms", took)
	}
	if err := New(outbound.Network{}, false, time.Second).Check(context.Background(), strings.TrimPrefix(huge.URL, "http://")+"/k/k:v1"+pin, DockerConfig{}); !errors.As(err, &u) || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("a manifest over the bound: %v; want Unresolved", err)
	}
}
