package integration

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartarchive"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

// Chart archives by digest, against real guest API servers: the pinned pair shipped with the
// operator installs with nothing fetched, and an archive a chart source serves is installed only
// when the deployment allows its digest.

// countingProxy is an HTTP proxy on a loopback port that forwards nothing and records every host
// asked of it. Given to the operator as HTTPS_PROXY, it sees every fetch from kube-vip's upstream
// sources (this machine has no other way out); loopback addresses never go through a proxy.
type countingProxy struct {
	URL   string
	mu    sync.Mutex
	hosts []string
}

func startCountingProxy(t *testing.T) *countingProxy {
	t.Helper()
	p := &countingProxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.hosts = append(p.hosts, r.Method+" "+r.Host)
		p.mu.Unlock()
		http.Error(w, "no way out of the test", http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *countingProxy) asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.hosts...)
}

// proxyEnv sends the operator's requests to hosts other than loopback through p.
func proxyEnv(p *countingProxy) []string {
	return []string{"HTTPS_PROXY=" + p.URL, "HTTP_PROXY=" + p.URL, "NO_PROXY=", "https_proxy=" + p.URL, "http_proxy=" + p.URL, "no_proxy="}
}

// bundleDir is a directory of bundled charts holding charts, as the image holds the pinned ones.
func bundleDir(t *testing.T, charts ...*chart.Chart) string {
	t.Helper()
	dir := t.TempDir()
	for _, c := range charts {
		if _, err := chartrepo.WriteArchive(c, dir); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBundledChartsInstallWithoutAFetch (item 1): with the pinned pair bundled (the stand-ins,
// allowed by digest as the tests' deployment allows them), the default kube-fip-config installs
// both releases into a guest and not one request leaves for a chart source, over several passes.
// Without the bundle the same configuration fetches from kube-vip's repository (the proxy sees it,
// so the count above could have seen something), and says once that it does. A bundled archive
// whose digest is not allowed stops the operator with a message naming the file.
func TestBundledChartsInstallWithoutAFetch(t *testing.T) {
	start := time.Now()
	proxy := startCountingProxy(t)
	dir := bundleDir(t, controlplane.PinnedStandIns()...)
	f := newFixture(t, "kube-fip-bundled")
	cproxy := f.shard.StartClusterProxy(t)
	a := rancherCluster(t, cproxy, "bundled-a", "c-m-bundleda", nil, f.shard.StartGuest(t, "bundled-a"))
	b := rancherCluster(t, cproxy, "bundled-b", "c-m-bundledb", nil, f.shard.StartGuest(t, "bundled-b"))
	f.extraNamespace(a.id)
	f.extraNamespace(b.id)
	// The default configuration, but for the interval and the install mode: the pinned charts from
	// kube-vip's repository.
	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled"})
	port := rig.FreePort(t)
	p := startOperatorWith(t, f.shard.Operator, f.shard.Env.Kubeconfig, proxyEnv(proxy), f.ns, port,
		append(controlplane.LoopbackChartSourceArgs(), "--guest-charts-dir="+dir)...)
	if err := p.WaitForLog(context.Background(), "controllers running", time.Minute); err != nil {
		t.Fatal(err)
	}
	f.createRange("bundled", "10.190.0.0/28")
	f.createFIPIn(a.id, "bundled-a-kubevip", "bundled", "10.190.0.2")
	x := f.waitFIPIn(a.id, "bundled-a-kubevip", 90*time.Second, "KubevipInstalled=True", func(x *v1.FloatingIP) bool { return v1.KubevipInstalled.IsTrue(x) })
	a.waitCIDR(t, "10.190.0.2/32", 30*time.Second)
	installed := time.Since(start)
	for _, release := range []string{"kube-vip", "kube-vip-cloud-provider"} {
		if !a.releaseDeployed(t, "kube-system", release) {
			t.Errorf("release kube-system/%s is not deployed in the guest", release)
		}
	}
	waitGuestPasses(t, port, a)
	if asked := proxy.asked(); len(asked) != 0 {
		t.Errorf("with the charts bundled, the operator asked %v", asked)
	}
	for _, c := range controlplane.PinnedStandIns() {
		if !strings.Contains(p.Logs(), "bundled guest charts: "+c.Name()+" "+c.Metadata.Version+" is installed from "+dir) {
			t.Errorf("the log does not say %s is installed from %s", c.Name(), dir)
		}
	}
	t.Logf("bundled: releases installed %s after the start, %d requests to chart sources; %s", installed.Round(100*time.Millisecond),
		len(proxy.asked()), message(x.Status.Conditions, v1.KubevipInstalled))
	if err := p.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	// Without the bundle: the pinned charts are fetched from kube-vip's repository.
	missing := filepath.Join(t.TempDir(), "none")
	p = startOperatorWith(t, f.shard.Operator, f.shard.Env.Kubeconfig, proxyEnv(proxy), f.ns, rig.FreePort(t),
		append(controlplane.LoopbackChartSourceArgs(), "--guest-charts-dir="+missing)...)
	if err := p.WaitForLog(context.Background(), "controllers running", time.Minute); err != nil {
		t.Fatal(err)
	}
	f.createFIPIn(b.id, "bundled-b-kubevip", "bundled", "10.190.0.3")
	x = f.waitFIPIn(b.id, "bundled-b-kubevip", 90*time.Second, "KubevipInstalled=False after a fetch from kube-vip.io", func(x *v1.FloatingIP) bool {
		return kubevipReason(v1.ReasonHelmFailed)(x) && strings.Contains(message(x.Status.Conditions, v1.KubevipInstalled), "kube-vip.io")
	})
	asked := proxy.asked()
	if len(asked) == 0 || !strings.Contains(strings.Join(asked, " "), "kube-vip.io") {
		t.Errorf("without the bundle the proxy saw %v; want kube-vip.io asked", asked)
	}
	if n := strings.Count(p.Logs(), "does not exist: the pinned charts are fetched"); n != 1 {
		t.Errorf("the missing directory is logged %d times; want once", n)
	}
	t.Logf("without the bundle: %d requests through the proxy (%s); %s", len(asked), strings.Join(asked[:min(len(asked), 3)], ", "),
		message(x.Status.Conditions, v1.KubevipInstalled))
	if err := p.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	// A bundled archive that is not the one allowed stops the operator.
	tampered := chartrepo.KubevipChart(config.DefaultKubevipChartVersion)
	tampered.Templates = append(tampered.Templates, &chart.File{Name: "templates/extra.yaml", Data: []byte("# not upstream's\n")})
	bad := bundleDir(t, tampered)
	stopped, err := controlplane.StartOperator(f.shard.Operator, nil, nil, append([]string{"--kubeconfig", f.shard.Env.Kubeconfig, "--namespace", f.ns,
		"--metrics-bind-address", "127.0.0.1", "--metrics-port", itoa(rig.FreePort(t)), "--guest-charts-dir=" + bad}, controlplane.LoopbackChartSourceArgs()...)...)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped.Done():
	case <-time.After(30 * time.Second):
		_ = stopped.Stop(5 * time.Second)
		t.Fatal("the operator runs with a bundled archive whose digest is not allowed")
	}
	want := filepath.Join(bad, "kube-vip-0.9.9.tgz") + ": the kube-vip chart archive has digest " + chartrepo.Digest(tampered)
	if !strings.Contains(stopped.Logs(), want) || strings.Contains(stopped.Logs(), "controllers running") {
		t.Errorf("the operator's output does not say %q:\n%s", want, rig.LastLines(stopped.Logs(), 10))
	}
}

// TestChartVariantIsRefusedByDigest (item 1, class 1 from the source's side): an allowed chart
// source serves the kube-vip chart one patch version up, identical but for the aggregation labels
// on its ClusterRole, which would fold kube-vip's rights into every namespace user's admin, edit
// and view. Its digest is not allowed: the FloatingIP says ChartRefused naming the digest and the
// setting, with a Warning Event, the archive is never downloaded (the index lists its digest), and
// nothing reaches the guest — no release record, no ClusterRole. The pinned version from the same
// source then installs in the same guest.
func TestChartVariantIsRefusedByDigest(t *testing.T) {
	variant := chartrepo.KubevipChart("0.9.10")
	for _, tpl := range variant.Templates {
		if tpl.Name == "templates/rbac.yaml" {
			tpl.Data = []byte(strings.Replace(string(tpl.Data), "kind: ClusterRole\nmetadata:\n", "kind: ClusterRole\nmetadata:\n  labels:\n"+
				"    rbac.authorization.k8s.io/aggregate-to-admin: \"true\"\n    rbac.authorization.k8s.io/aggregate-to-edit: \"true\"\n"+
				"    rbac.authorization.k8s.io/aggregate-to-view: \"true\"\n", 1))
		}
	}
	repo := startPathCountingRepo(t, append(controlplane.PinnedStandIns(), variant)...)
	f := newFixture(t, "kube-fip-variant")
	proxy := f.shard.StartClusterProxy(t)
	f.createRange("variant", "10.191.0.0/28")
	base := map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled", "kubevipChartRepoUrl": repo.URL}
	withVariant := map[string]string{"kubevipChartVersion": "0.9.10"}
	for k, v := range base {
		withVariant[k] = v
	}
	f.operatorConfig(withVariant)
	f.operator()
	gc := policyGuest(t, f, proxy, "variant1", "variant", "10.191.0.2")
	x := f.kubevipDecided(gc, "variant1")
	for _, what := range reachedGuest(t, gc) {
		t.Errorf("in the guest: %s", what)
	}
	roles, err := gc.direct.RbacV1().ClusterRoles().List(context.Background(), listAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roles.Items {
		if r.Labels["rbac.authorization.k8s.io/aggregate-to-admin"] == "true" && strings.Contains(r.Name, "kube-vip") {
			t.Errorf("ClusterRole %s aggregates into admin", r.Name)
		}
	}
	msg := message(x.Status.Conditions, v1.KubevipInstalled)
	entry := chartarchive.DigestEntry(guestchart.Kubevip, chartrepo.Digest(variant))
	if !kubevipReason(v1.ReasonChartRefused)(x) || !strings.Contains(msg, entry) || !strings.Contains(msg, "security.allowedChartDigests") {
		t.Errorf("KubevipInstalled %q; want ChartRefused naming %s and security.allowedChartDigests", msg, entry)
	}
	rig.Eventually(t, 30*time.Second, "a Warning Event ChartRefused", func() bool {
		return f.shard.HasEvent(t, gc.id, "variant1", corev1.EventTypeWarning, v1.ReasonChartRefused, chartrepo.Digest(variant))
	})
	if n := repo.count("/kube-vip-0.9.10.tgz"); n != 0 {
		t.Errorf("the variant's archive was downloaded %d times; its listed digest should have refused it first", n)
	}
	t.Logf("the variant: %s (index read %d times, archive %d)", msg, repo.count("/index.yaml"), repo.count("/kube-vip-0.9.10.tgz"))

	// The benign install from the same source.
	f.operatorConfig(base)
	f.waitFIPIn(gc.id, "variant1", 90*time.Second, "KubevipInstalled=True at the pinned version", func(x *v1.FloatingIP) bool {
		return v1.KubevipInstalled.IsTrue(x)
	})
	gc.waitCIDR(t, "10.191.0.2/32", 30*time.Second)
}

// pathCountingRepo is a chart repository on a loopback port that counts the requests for each path.
type pathCountingRepo struct {
	URL    string
	mu     sync.Mutex
	counts map[string]int
}

func startPathCountingRepo(t *testing.T, charts ...*chart.Chart) *pathCountingRepo {
	t.Helper()
	repo := chartrepo.ChartRepoForTest(t, charts...)
	r := &pathCountingRepo{counts: map[string]int{}}
	upstream := repo.URL
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.counts[req.URL.Path]++
		r.mu.Unlock()
		if req.URL.Path == "/index.yaml" {
			// The index lists its archives here, so that their downloads are counted too.
			resp, err := http.Get(upstream + "/index.yaml")
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			_, _ = w.Write([]byte(strings.ReplaceAll(string(body), upstream, r.URL)))
			return
		}
		http.Redirect(w, req, upstream+req.URL.Path, http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *pathCountingRepo) count(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[path]
}
