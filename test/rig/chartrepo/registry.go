package chartrepo

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/registry"
)

// OCIRegistry is an in-memory OCI distribution registry on a loopback port, for charts pulled by
// oci:// reference.
type OCIRegistry struct {
	// Host is host:port of the registry.
	Host   string
	server *http.Server
	client *registry.Client
}

// StartOCIRegistry starts an empty registry.
func StartOCIRegistry() (*OCIRegistry, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	handler := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	r := &OCIRegistry{Host: ln.Addr().String(), server: &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = r.server.Serve(ln) }()
	r.client, err = registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptWriter(io.Discard))
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Push stores a chart under oci://<host>/charts/<name>:<version> and returns the reference
// without the tag, as the kubevipChartRef option takes it.
func (r *OCIRegistry) Push(c *chart.Chart) (string, error) {
	data, err := Archive(c)
	if err != nil {
		return "", err
	}
	ref := fmt.Sprintf("%s/charts/%s", r.Host, c.Name())
	if _, err := r.client.Push(data, ref+":"+c.Metadata.Version); err != nil {
		return "", fmt.Errorf("pushing %s to the test registry: %w", c.Name(), err)
	}
	return "oci://" + ref, nil
}

// Close stops the registry.
func (r *OCIRegistry) Close() error { return r.server.Close() }
