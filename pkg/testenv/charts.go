package testenv

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// KubevipChart is a small stand-in for the kube-vip chart: a DaemonSet whose environment carries
// the values, so a test can see what was installed.
func KubevipChart(version string) *chart.Chart {
	return testChart("kube-vip", version, `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ .Values.nameOverride | default .Release.Name }}
  namespace: {{ .Release.Namespace }}
  labels:
    chart-version: {{ .Chart.Version | quote }}
spec:
  selector:
    matchLabels: {app: kube-vip}
  template:
    metadata:
      labels: {app: kube-vip}
    spec:
      nodeSelector: {{ toJson .Values.nodeSelector }}
      containers:
      - name: kube-vip
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
        env:
        - name: vip_interface
          value: {{ .Values.config.vip_interface | quote }}
`)
}

// KubevipCloudProviderChart is a small stand-in for the kube-vip-cloud-provider chart: a
// Deployment whose environment names the ConfigMap it reads.
func KubevipCloudProviderChart(version string) *chart.Chart {
	return testChart("kube-vip-cloud-provider", version, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Values.nameOverride | default .Release.Name }}
  namespace: {{ .Release.Namespace }}
  labels:
    chart-version: {{ .Chart.Version | quote }}
spec:
  selector:
    matchLabels: {app: kube-vip-cloud-provider}
  template:
    metadata:
      labels: {app: kube-vip-cloud-provider}
    spec:
      containers:
      - name: kube-vip-cloud-provider
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
        env:
        {{- range $k, $v := .Values.env }}
        - name: {{ $k }}
          value: {{ $v | quote }}
        {{- end }}
`)
}

func testChart(name, version, template string) *chart.Chart {
	values := map[string]interface{}{
		"image":        map[string]interface{}{"repository": "example.invalid/" + name, "tag": version},
		"config":       map[string]interface{}{"vip_interface": "eth0"},
		"nodeSelector": map[string]interface{}{},
		"env":          map[string]interface{}{},
	}
	raw, _ := yaml.Marshal(values)
	return &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: version, AppVersion: version, Type: "application"},
		Values:    values,
		Raw:       []*chart.File{{Name: chartutil.ValuesfileName, Data: raw}},
		Templates: []*chart.File{{Name: "templates/workload.yaml", Data: []byte(template)}},
	}
}

// ChartRepo is an HTTP Helm chart repository on a loopback port.
type ChartRepo struct {
	URL    string
	dir    string
	server *http.Server
	mu     sync.Mutex
}

// StartChartRepo serves charts; add more with Add.
func StartChartRepo(charts ...*chart.Chart) (*ChartRepo, error) {
	dir, err := os.MkdirTemp("", "kube-fip-charts-")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &ChartRepo{URL: "http://" + ln.Addr().String(), dir: dir}
	r.server = &http.Server{Handler: r.handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.server.Serve(ln) }()
	for _, c := range charts {
		if err := r.Add(c); err != nil {
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

// Add packages a chart into the repository and rebuilds its index.
func (r *ChartRepo) Add(c *chart.Chart) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := chartutil.Save(c, r.dir); err != nil {
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

// packageChart returns a chart as the .tgz bytes Helm pushes to a registry.
func packageChart(c *chart.Chart) ([]byte, error) {
	dir, err := os.MkdirTemp("", "kube-fip-chart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path, err := chartutil.Save(c, dir)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) || !strings.HasSuffix(path, ".tgz") {
		return nil, fmt.Errorf("%s is not a chart archive", path)
	}
	return data, nil
}
