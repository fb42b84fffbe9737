package chartrepo

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/repo"
)

// ChartRepo is an HTTP Helm chart repository on a loopback port.
type ChartRepo struct {
	URL    string
	dir    string
	server *http.Server
	mu     sync.Mutex
}

// StartChartRepo serves charts on a loopback port; add more with Add.
func StartChartRepo(charts ...*chart.Chart) (*ChartRepo, error) {
	return StartChartRepoOn("127.0.0.1", charts...)
}

// StartChartRepoOn serves charts on a free port of host: an address of the host's that a test
// cluster's pods reach.
func StartChartRepoOn(host string, charts ...*chart.Chart) (*ChartRepo, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	return ServeChartRepo(ln, "http://"+ln.Addr().String(), charts...)
}

// ServeChartRepo serves charts on l, which its clients reach at url (the base of the archives'
// URLs in its index): a TLS listener under a name of the test's, say.
func ServeChartRepo(l net.Listener, url string, charts ...*chart.Chart) (*ChartRepo, error) {
	dir, err := os.MkdirTemp("", "kube-fip-charts-")
	if err != nil {
		l.Close()
		return nil, err
	}
	r := &ChartRepo{URL: url, dir: dir}
	r.server = &http.Server{Handler: r.handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.server.Serve(l) }()
	for _, c := range charts {
		if err := r.Add(c); err != nil {
			_ = r.Close()
			return nil, err
		}
	}
	return r, nil
}

func (r *ChartRepo) handler() http.Handler {
	files := http.FileServer(http.Dir(r.dir))
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		defer r.mu.Unlock()
		files.ServeHTTP(w, req)
	})
}

// Add packages a chart into the repository (Archive: the same chart always gives the same digest)
// and rebuilds its index.
func (r *ChartRepo) Add(c *chart.Chart) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := WriteArchive(c, r.dir); err != nil {
		return fmt.Errorf("packaging test chart %s: %w", c.Name(), err)
	}
	index, err := repo.IndexDirectory(r.dir, r.URL)
	if err != nil {
		return err
	}
	index.SortEntries()
	return index.WriteFile(filepath.Join(r.dir, "index.yaml"), 0o644)
}

// Close stops the repository and removes its files.
func (r *ChartRepo) Close() error {
	err := r.server.Close()
	_ = os.RemoveAll(r.dir)
	return err
}
