package integration

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
)

// What a chart source's data may cost the operator (classes 6 and 7), against real guest API
// servers: guest A, labelled kube-vip=true, installs from the source; guest B, unlabelled, only
// gets its address, and is configured while A's install meets the source. The operator's peak
// resident memory may grow past what it held before the attack by at most sourceBudget.

// sourceBudget is what one chart source's index or chart may cost the operator: an index is
// parsed within 40 MiB (pkg/helminstall, index.go), and a chart renders in a process of its own.
const sourceBudget = 64 << 20

// sourceWorld is a fixture with guests A (labelled) and B, their FloatingIPs not yet created.
type sourceWorld struct {
	f    *fixture
	a, b *guestCluster
}

func newSourceWorld(t *testing.T, name string) *sourceWorld {
	f := newFixture(t, "kube-fip-"+name)
	proxy := f.shard.StartClusterProxy(t)
	w := &sourceWorld{f: f,
		a: rancherCluster(t, proxy, name+"-a", "c-m-"+name+"a", map[string]string{config.ClusterLabel: "true"}, f.shard.StartGuest(t, name+"-a")),
		b: rancherCluster(t, proxy, name+"-b", "c-m-"+name+"b", nil, f.shard.StartGuest(t, name+"-b"))}
	f.extraNamespace(w.a.id)
	f.extraNamespace(w.b.id)
	return w
}

// attack runs the operator with extra flags, configures B, takes the operator's peak memory
// so far as the base, starts A's install and, while it meets the source, moves B to another
// address and waits for B to have it; then it waits until A's FloatingIP satisfies refused and
// two more passes went over both. It returns the operator, the base and A's FloatingIP.
func (w *sourceWorld) attack(t *testing.T, cidr string, refused func(*v1.FloatingIP) bool, extra ...string) (*controlplane.Process, int64, *v1.FloatingIP) {
	t.Helper()
	f := w.f
	p, port := f.operator(extra...)
	rangeName := f.ns
	if len(f.ranges) == 0 {
		f.createRange(rangeName, cidr+"0/28")
	}
	bName, aName := w.b.name+"-kubevip", w.a.name+"-kubevip"
	if _, err := f.api.FloatingIP().Get(w.b.id, bName, metav1.GetOptions{}); err != nil {
		f.createFIPIn(w.b.id, bName, rangeName, cidr+"3")
	}
	f.waitFIPIn(w.b.id, bName, 60*time.Second, "guest B Configured", guestReason(v1.ReasonConfigured))
	base, err := p.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.api.FloatingIP().Get(w.a.id, aName, metav1.GetOptions{}); err != nil {
		f.createFIPIn(w.a.id, aName, rangeName, cidr+"2")
	}
	start := time.Now()
	next := cidr + "4"
	if w.b.kubevipCIDR(t) == next+"/32" {
		next = cidr + "3"
	}
	f.editFIPIn(w.b.id, bName, func(x *v1.FloatingIP) { x.Spec.IPAddress = next })
	w.b.waitCIDR(t, next+"/32", 60*time.Second)
	t.Logf("guest B moved to %s %s after guest A's install started", next, time.Since(start).Round(100*time.Millisecond))
	// Not fatal: what the operator's memory did is looked at either way.
	var x *v1.FloatingIP
	if !rig.Within(120*time.Second, func() bool { x = f.getFIPIn(w.a.id, aName); return refused(x) }) {
		t.Errorf("guest A: the install was not refused saying why within 120 s; KubevipInstalled %q", message(x.Status.Conditions, v1.KubevipInstalled))
		return p, base, x
	}
	waitGuestPasses(t, port, w.a, w.b)
	if !v1.GuestConfigured.IsTrue(f.getFIPIn(w.b.id, bName)) {
		t.Error("guest B is no longer configured")
	}
	select {
	case <-p.Done():
		t.Fatalf("the operator exited; its output ends:\n%s", rig.LastLines(p.Logs(), 40))
	default:
	}
	return p, base, x
}

// withinBudget checks the operator's peak memory against base + sourceBudget and logs both.
func withinBudget(t *testing.T, p *controlplane.Process, base int64, what string) {
	t.Helper()
	peak, err := p.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: peak RSS %.1f MiB, %.1f MiB before the attack (+%.1f MiB; the budget is +%.0f MiB)", what, mib(peak), mib(base), mib(peak-base), mib(sourceBudget))
	if peak > base+sourceBudget {
		t.Errorf("%s: the operator's peak RSS grew by %.1f MiB, over the %.0f MiB a chart source may cost", what, mib(peak-base), mib(sourceBudget))
	}
}

// largeIndex is a repository index of about size bytes: many charts of twenty versions each, as
// a repository mirroring much more than kube-vip might publish, and kube-vip's own entry last.
func largeIndex(size int, kubevipURL string) []byte {
	var b bytes.Buffer
	b.WriteString("apiVersion: v1\nentries:\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "  chart-%d:\n", i)
		for v := 0; v < 20; v++ {
			fmt.Fprintf(&b, "  - apiVersion: v2\n    appVersion: v1.0.%d\n    created: \"2026-03-23T18:30:28.6407607Z\"\n"+
				"    description: A chart among many\n    digest: 106dc112b119abdbac82ea4be13dc8d815028972d101a45bd7a448d68611f1f6\n"+
				"    keywords:\n    - networking\n    - virtual ip\n    name: chart-%d\n    urls:\n    - https://charts.example.com/chart-%d-0.9.%d.tgz\n    version: 0.9.%d\n",
				v, i, i, v, v)
		}
	}
	fmt.Fprintf(&b, "  kube-vip:\n  - apiVersion: v2\n    name: kube-vip\n    urls:\n    - %s\n    version: %s\n", kubevipURL, config.DefaultKubevipChartVersion)
	return b.Bytes()
}

// TestSourceIndexMemoryBudget (class 6): an allowed chart source whose index.yaml is 30 MiB (under
// the 32 MiB the operator read before) costs the operator at most sourceBudget of memory while
// guest B is configured; A's FloatingIP says the index is larger than the operator reads.
func TestSourceIndexMemoryBudget(t *testing.T) {
	shards.Take(t)
	var served atomic.Int64
	var index []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/index.yaml" {
			http.NotFound(w, r)
			return
		}
		n, _ := w.Write(index)
		served.Add(int64(n))
	}))
	t.Cleanup(srv.Close)
	index = largeIndex(30<<20, srv.URL+"/kube-vip-0.9.9.tgz")
	w := newSourceWorld(t, "hindex")
	w.f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2", "kubevipChartRepoUrl": srv.URL})
	start := time.Now()
	p, base, x := w.attack(t, "10.192.0.", func(x *v1.FloatingIP) bool {
		return v1.KubevipInstalled.IsFalse(x) && strings.Contains(message(x.Status.Conditions, v1.KubevipInstalled), "index")
	})
	t.Logf("guest A after %s: %s (%d KiB of the %d MiB index sent)", time.Since(start).Round(100*time.Millisecond),
		message(x.Status.Conditions, v1.KubevipInstalled), served.Load()>>10, len(index)>>20)
	if msg := message(x.Status.Conditions, v1.KubevipInstalled); !strings.Contains(msg, "larger than 256 KiB") {
		t.Errorf("guest A's KubevipInstalled %q does not say the index is too large", msg)
	}
	withinBudget(t, p, base, "a 30 MiB index")
}

// doublingChart is the kube-vip stand-in with a template that doubles a string 25 times: 512 MiB
// at the end, and more than that held on the way.
func doublingChart() *chart.Chart {
	ch := chartrepo.KubevipChart(config.DefaultKubevipChartVersion)
	ch.Templates = append(ch.Templates, &chart.File{Name: "templates/banner.yaml", Data: []byte(
		`{{- $s := "0123456789abcdef" }}{{- range until 25 }}{{- $s = print $s $s }}{{- end }}` +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: banner\ndata:\n  banner: {{ $s | quote }}\n")})
	return ch
}

// TestSourceTemplateMemoryBudget (class 7): an allowed chart source serves the kube-vip chart with
// a template that builds a string of 512 MiB. Not allowed by digest, it is never rendered: guest A
// says ChartRefused and the operator's memory does not grow past the budget. Allowed by digest at
// deployment level, its render is ended by the render budget: A says RenderedObjectRefused, the
// chart is not rendered again with those values until its back-off ends, and the operator's memory
// still stays within the budget, the render's process within its own.
func TestSourceTemplateMemoryBudget(t *testing.T) {
	shards.Take(t)
	hostile := doublingChart()
	repo := chartrepo.ChartRepoForTest(t, hostile, chartrepo.KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion))
	w := newSourceWorld(t, "htemplate")
	w.f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2", "kubevipChartRepoUrl": repo.URL})
	p, base, x := w.attack(t, "10.193.0.", kubevipReason(v1.ReasonChartRefused))
	t.Logf("not allowed by digest: %s", message(x.Status.Conditions, v1.KubevipInstalled))
	withinBudget(t, p, base, "a chart not allowed by digest")
	if err := p.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	// A render time long enough that the memory budget ends the render on a busy machine too.
	p, base, x = w.attack(t, "10.193.0.", kubevipReason(v1.ReasonRenderRefused), controlplane.StandInDigestsArg(hostile), "--render-time=2m")
	msg := message(x.Status.Conditions, v1.KubevipInstalled)
	t.Logf("allowed by digest, after %s: %s", time.Since(start).Round(100*time.Millisecond), msg)
	if !strings.Contains(msg, "needed more than the 128 MiB of memory a render may have") || !strings.Contains(msg, "with these values it is rendered again after") {
		t.Errorf("guest A's KubevipInstalled %q; want the render ended at its memory budget", msg)
	}
	withinBudget(t, p, base, "a chart allowed by digest whose template builds 512 MiB")
	if helmReleases(t, w.a) != 0 {
		t.Error("guest A holds a release")
	}
}

// renderedAgainAfter is the time a RenderedObjectRefused message says the chart is rendered again
// after, "" when it says none.
func renderedAgainAfter(msg string) string {
	_, after, ok := strings.Cut(msg, "rendered again after ")
	if !ok {
		return ""
	}
	return strings.TrimRight(strings.Fields(after)[0], ";")
}

// TestSourceTemplateOverrunIsRenderedAgain: a chart allowed by digest whose template builds without
// end only for one value (resources.requests.cpu 111m, as a kube-fip-config editor may set it)
// overruns its render budget for guest A. It is not refused for good: with the same values it is
// rendered again once its back-off (--render-retry) ends, overrunning again, and the back-off
// doubles; and as soon as the values change, it renders and is installed, well before that
// back-off ends.
func TestSourceTemplateOverrunIsRenderedAgain(t *testing.T) {
	shards.Take(t)
	hostile := chartrepo.KubevipChart(config.DefaultKubevipChartVersion)
	hostile.Templates = append(hostile.Templates, &chart.File{Name: "templates/banner.yaml", Data: []byte(
		`{{- if eq (dig "resources" "requests" "cpu" "" .Values.AsMap) "111m" }}{{- $s := "0123456789abcdef" }}{{- range until 25 }}{{- $s = print $s $s }}{{- end }}` +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: banner\ndata:\n  banner: {{ $s | quote }}\n{{- end }}\n")})
	repo := chartrepo.ChartRepoForTest(t, hostile, chartrepo.KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion))
	w := newSourceWorld(t, "hretry")
	withCPU := func(cpu string) map[string]string {
		return map[string]string{"operateGuestClusterInterval": "2", "kubevipChartRepoUrl": repo.URL,
			"kubevipChartValues": kubevipValuesWith(t, func(v map[string]interface{}) {
				v["resources"] = map[string]interface{}{"requests": map[string]interface{}{"cpu": cpu}}
			})}
	}
	w.f.operatorConfig(withCPU("111m"))
	const retry = 10 * time.Second
	// A render time long enough that the memory budget ends each render on a busy machine too.
	w.f.operator(controlplane.StandInDigestsArg(hostile), "--render-retry="+retry.String(), "--render-time=2m")
	w.f.createRange("hretry", "10.194.0.0/28")
	name := w.a.name + "-kubevip"
	w.f.createFIPIn(w.a.id, name, "hretry", "10.194.0.2")

	overran := func(not string) func(*v1.FloatingIP) bool {
		return func(x *v1.FloatingIP) bool {
			msg := message(x.Status.Conditions, v1.KubevipInstalled)
			return strings.Contains(msg, "needed more than the 128 MiB") && !strings.Contains(msg, "earlier") && renderedAgainAfter(msg) != not
		}
	}
	x := w.f.waitFIPIn(w.a.id, name, 90*time.Second, "guest A's render overrun", overran(""))
	first := renderedAgainAfter(message(x.Status.Conditions, v1.KubevipInstalled))
	t.Logf("first overrun: %s", message(x.Status.Conditions, v1.KubevipInstalled))
	w.f.waitFIPIn(w.a.id, name, 30*time.Second, "the same values refused without a render", func(x *v1.FloatingIP) bool {
		return strings.Contains(message(x.Status.Conditions, v1.KubevipInstalled), "earlier: with these values it is rendered again after "+first)
	})
	x = w.f.waitFIPIn(w.a.id, name, 60*time.Second, "guest A's chart rendered again once the back-off ended", overran(first))
	msg := message(x.Status.Conditions, v1.KubevipInstalled)
	t.Logf("rendered again after the back-off: %s", msg)
	firstAt, err1 := time.Parse(time.RFC3339, first)
	second, err2 := time.Parse(time.RFC3339, renderedAgainAfter(msg))
	if err1 != nil || err2 != nil || second.Sub(firstAt) < 2*retry {
		t.Errorf("the back-off ran to %s, then to %s; want it doubled (at least %s later)", first, renderedAgainAfter(msg), 2*retry)
	}

	w.f.operatorConfig(withCPU("100m"))
	w.f.waitFIPIn(w.a.id, name, 60*time.Second, "guest A installed with other values", func(x *v1.FloatingIP) bool { return v1.KubevipInstalled.IsTrue(x) })
	if now := time.Now(); !now.Before(second) {
		t.Errorf("installed at %s, not before the back-off of the old values ended at %s", now.UTC().Format(time.RFC3339), second.Format(time.RFC3339))
	}
}
