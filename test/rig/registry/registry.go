// Package registry serves an OCI image registry for the end-to-end suite, where the nodes'
// containerd pulls every image from, as an air-gapped node pulls from the administrator's own
// registry. The registry is go-containerregistry's (pkg/registry, at the version go.mod pins,
// v0.20.2), which implements the pull and push API of the OCI distribution specification that
// Harbor, distribution's registry and the others serve. What this package adds is an access log:
// each request's client address, method, path, status and user agent, in the order served.
package registry

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Access is one request the registry served.
type Access struct {
	Client    netip.Addr
	Method    string
	Path      string
	Status    int
	UserAgent string
}

// Registry is a running registry over plain http.
type Registry struct {
	// Host is where it listens, host:port: the registry part of an image reference.
	Host string

	srv *http.Server
	mu  sync.Mutex
	log []Access
}

// Start serves a registry on l until Close.
func Start(l net.Listener) *Registry {
	r := &Registry{Host: l.Addr().String()}
	handler := ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)))
	r.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		handler.ServeHTTP(rec, req)
		client, _ := netip.ParseAddrPort(req.RemoteAddr)
		r.mu.Lock()
		r.log = append(r.log, Access{Client: client.Addr(), Method: req.Method, Path: req.URL.Path, Status: rec.status, UserAgent: req.UserAgent()})
		r.mu.Unlock()
	})}
	go func() { _ = r.srv.Serve(l) }()
	return r
}

// recorder keeps the status a handler wrote.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

// Push writes img to repository:tag, as an administrator's copy tool writes a mirrored image,
// and returns its digest.
func (r *Registry) Push(repository, tag string, img v1.Image) (v1.Hash, error) {
	ref, err := name.NewTag(r.Host+"/"+repository+":"+tag, name.Insecure)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.Write(ref, img); err != nil {
		return v1.Hash{}, fmt.Errorf("pushing %s: %w", ref, err)
	}
	return img.Digest()
}

// Remove takes the image of repository:tag out of the registry: the tag and the manifest it names
// (by its digest), as an administrator's clean-up or a mirror that never got it leaves it.
func (r *Registry) Remove(repository, tag string) error {
	tagRef, err := name.NewTag(r.Host+"/"+repository+":"+tag, name.Insecure)
	if err != nil {
		return err
	}
	desc, err := remote.Head(tagRef)
	if err != nil {
		return err
	}
	for _, ref := range []name.Reference{tagRef, tagRef.Context().Digest(desc.Digest.String())} {
		if err := remote.Delete(ref); err != nil {
			return fmt.Errorf("deleting %s: %w", ref, err)
		}
	}
	return nil
}

// Log is every request served so far.
func (r *Registry) Log() []Access {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Access(nil), r.log...)
}

// Pulled says whether client pulled the image of repository with manifest digest as a container
// runtime does: the manifest by its digest, then its config and every layer, each answered 200.
// It returns what is missing otherwise.
func (r *Registry) Pulled(client netip.Addr, repository string, img v1.Image) (bool, string, error) {
	digest, err := img.Digest()
	if err != nil {
		return false, "", err
	}
	m, err := img.Manifest()
	if err != nil {
		return false, "", err
	}
	want := []string{"/v2/" + repository + "/manifests/" + digest.String(), "/v2/" + repository + "/blobs/" + m.Config.Digest.String()}
	for _, l := range m.Layers {
		want = append(want, "/v2/"+repository+"/blobs/"+l.Digest.String())
	}
	got := map[string]bool{}
	for _, a := range r.Log() {
		if a.Client == client && a.Method == http.MethodGet && a.Status == http.StatusOK {
			got[a.Path] = true
		}
	}
	var missing []string
	for _, p := range want {
		if !got[p] {
			missing = append(missing, "GET "+p)
		}
	}
	return len(missing) == 0, strings.Join(missing, ", "), nil
}

// Close stops serving.
func (r *Registry) Close() error { return r.srv.Close() }

// MirrorPath is where an image of ref's repository lies in a mirror registry: its path without the
// registry's host (ghcr.io/kube-vip/kube-vip → kube-vip/kube-vip), as Rancher's system default
// registry and the chart's image values expect it.
func MirrorPath(ref string) string {
	first, rest, ok := strings.Cut(ref, "/")
	if ok && strings.ContainsAny(first, ".:") {
		return rest
	}
	return ref
}
