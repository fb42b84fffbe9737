package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// startBenchOperator starts the operator with its Lease, Events and kube-fip-config in ns and the
// extra flags and the words of $BENCH_OPERATOR_ARGS appended to its flags. It does not wait for the controllers.
// Its kube-fip-config sets addressRetention to 0, and nothing else: the benchmarks delete their
// clusters and then their range, which would otherwise wait a day for the retained addresses.
// prof, when not nil, has the operator serve its profiles and starts fetching its CPU profile.
func startBenchOperator(b *testing.B, ns string, prof *benchProfiles, extra ...string) *controlplane.Process {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: config.ConfigMapName, Namespace: ns},
		Data: map[string]string{config.KeyAddressRetention: "0"}}
	cms := kubernetes.NewForConfigOrDie(shared.Env.Config).CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(context.Background(), cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatalf("writing the benchmark operator's %s: %v", config.ConfigMapName, err)
	}
	args := []string{"--kubeconfig", shared.Env.Kubeconfig, "--namespace", ns, "--metrics-bind-address", "127.0.0.1", "--metrics-port", strconv.Itoa(rig.FreePort(b))}
	args = append(append(append(args, prof.args()...), extra...), benchOperatorArgs()...)
	p, err := controlplane.StartOperator(shared.Operator, nil, chartRuntimeEnv(b), args...)
	if err != nil {
		b.Fatal(err)
	}
	prof.startCPU(b)
	return p
}

// chartRuntimeEnv is the memory environment the chart gives the operator with its default values
// (the container's memory limit as the Downward API writes it, the ratio, GOMEMLIMIT when
// goMemoryLimit is set, GOGC), so that the benchmarks measure the operator as installed.
// $BENCH_GO_MEMORY_LIMIT, when set, is given as GOMEMLIMIT instead ("off": no limit at all), and
// $BENCH_GOGC as GOGC.
func chartRuntimeEnv(b *testing.B) []string {
	env := chartMemoryEnv(b)
	for variable, name := range map[string]string{"BENCH_GO_MEMORY_LIMIT": "GOMEMLIMIT", "BENCH_GOGC": "GOGC"} {
		value, ok := os.LookupEnv(variable)
		if !ok {
			continue
		}
		out := []string{name + "=" + value}
		for _, v := range env {
			if !strings.HasPrefix(v, name+"=") {
				out = append(out, v)
			}
		}
		env = out
	}
	return env
}

// chartMemoryEnv is the memory environment of the chart's Deployment rendered with its default
// values: GOMEMLIMIT, MEMORY_LIMIT_RATIO and GOGC as given, CONTAINER_MEMORY_LIMIT as the Downward
// API fills it from the container's limits.memory.
func chartMemoryEnv(b *testing.B) []string {
	b.Helper()
	var env []string
	for _, obj := range chartrepo.RenderOperatorChart(b, "kube-fip", nil) {
		if obj.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
			b.Fatal(err)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, v := range c.Env {
				switch {
				case v.Name == "GOMEMLIMIT" || v.Name == "MEMORY_LIMIT_RATIO" || v.Name == "GOGC":
					env = append(env, v.Name+"="+v.Value)
				case v.ValueFrom != nil && v.ValueFrom.ResourceFieldRef != nil && v.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
					limit := c.Resources.Limits[corev1.ResourceMemory]
					env = append(env, fmt.Sprintf("%s=%d", v.Name, limit.Value()))
				}
			}
		}
	}
	return env
}

// memoryLimitText says which Go memory limit and GOGC env gives the operator, for the printed
// figures.
func memoryLimitText(env []string) string {
	gc := "; GOGC 100 (Go's default)"
	for _, v := range env {
		if g, ok := strings.CutPrefix(v, "GOGC="); ok {
			gc = "; GOGC " + g
		}
	}
	for _, v := range env {
		if l, ok := strings.CutPrefix(v, "GOMEMLIMIT="); ok {
			return "GOMEMLIMIT " + l + gc
		}
	}
	for _, v := range env {
		if l, ok := strings.CutPrefix(v, "CONTAINER_MEMORY_LIMIT="); ok {
			return "derived from a container limit of " + l + " bytes" + gc
		}
	}
	return "none" + gc
}

// runningBenchOperator starts the benchmarks' operator with its Lease and Events in namespace ns,
// waits until its controllers run, and stops it when the benchmark ends.
func runningBenchOperator(b *testing.B, r *rancher.World, ns string) *controlplane.Process {
	shared.CreateNamespace(b, ns)
	p := startBenchOperator(b, ns, nil)
	b.Cleanup(func() { _ = p.Stop(30 * time.Second) })
	if err := p.WaitForLog(context.Background(), "controllers running", time.Minute); err != nil {
		b.Fatal(err)
	}
	return p
}

// benchOperatorArgs are the words of $BENCH_OPERATOR_ARGS, flags for the benchmarks' operator.
func benchOperatorArgs() []string { return strings.Fields(os.Getenv("BENCH_OPERATOR_ARGS")) }

// fipWatch is a cache of every FloatingIP fed by a watch until the benchmark ends: progress is read
// from it rather than by listing every FloatingIP again and again, which would load the API server
// being measured. It also counts the writes the watch shows that changed nothing but the guest
// pass's fields, to tell the guest pass's status writes from the allocation path's.
type fipWatch struct {
	kubefipcontrollers.FloatingIPCache
	guestWrites atomic.Int64
}

func watchFloatingIPs(b *testing.B) *fipWatch {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	factory := kubefip.NewFactoryFromConfigOrDie(shared.Env.Config)
	w := &fipWatch{FloatingIPCache: factory.Kubefip().V1().FloatingIP().Cache()}
	_, err := factory.Kubefip().V1().FloatingIP().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj interface{}) {
			old, ok1 := oldObj.(*v1.FloatingIP)
			updated, ok2 := newObj.(*v1.FloatingIP)
			if ok1 && ok2 && old.ResourceVersion != updated.ResourceVersion && guestFieldsOnly(old, updated) {
				w.guestWrites.Add(1)
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := factory.Start(ctx, 1); err != nil {
		b.Fatal(err)
	}
	if err := factory.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	return w
}

// guestFieldsOnly tells whether a FloatingIP changed in nothing the allocation path writes: its
// metadata, spec, address, range, observed generation and Allocated condition are as they were, so
// the write was the guest pass's (its GuestConfigured and KubevipInstalled conditions, guest
// state, and the Ready condition both compute).
func guestFieldsOnly(old, updated *v1.FloatingIP) bool {
	allocated := func(f *v1.FloatingIP) interface{} {
		c, _ := v1.GetCondition(f.Status.Conditions, v1.Allocated)
		return []interface{}{f.Spec, f.Annotations, f.Finalizers, f.DeletionTimestamp, f.Status.IPAddress, f.Status.Range,
			f.Status.ClusterName, f.Status.ObservedGeneration, c}
	}
	return equality.Semantic.DeepEqual(allocated(old), allocated(updated))
}

// benchGuests are the guest clusters of one iteration, all on one Harvester cluster and network.
type benchGuests struct {
	names  []string
	byName map[string]rancher.Guest
}

// newBenchGuests names n guests prefix-0000, prefix-0001, … on the Harvester cluster harv, vlan10.
func newBenchGuests(prefix string, n int, harv string) benchGuests {
	s := benchGuests{names: make([]string, n), byName: map[string]rancher.Guest{}}
	for i := range s.names {
		g := rancher.Guest{Name: fmt.Sprintf("%s-%04d", prefix, i), Harvester: "c-m-" + harv, Display: harv, Network: rancher.Network("vlan10")}
		g.ID = "c-m-" + g.Name
		s.names[i], s.byName[g.Name] = g.Name, g
	}
	return s
}

// addGuests creates every part of every guest, 16 guests at a time, in addGuest's order but for
// the Harvester cluster, which addBenchRange created: creating it again for every guest would be
// answered 409 and counted among the conflicts.
func addGuests(r *rancher.World, s benchGuests) error {
	return rig.Parallel(s.names, func(name string) error {
		steps := r.Steps(s.byName[name])
		for _, step := range []string{"credential", "config", "namespace", "cluster"} {
			if err := steps[step](); err != nil {
				return err
			}
		}
		return nil
	})
}

// addBenchRange creates the Harvester cluster harv (its management cluster) and a range for its
// network vlan10.
func addBenchRange(r *rancher.World, name, harv, cidr string) error {
	if err := r.AddManagementCluster("c-m-"+harv, harv); err != nil {
		return err
	}
	_, err := r.FIPs.FloatingIPRange().Create(&v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			v1.AnnotationHarvesterClusterName: harv, v1.AnnotationHarvesterNetworkName: "vlan10"}},
		Spec: v1.FloatingIPRangeSpec{IPRange: cidr},
	})
	if err != nil {
		return fmt.Errorf("creating range %s: %w", name, err)
	}
	return nil
}

// convergence sums one sub-benchmark's figures over its iterations.
type convergence struct {
	clusters int
	// suffix ends the name of every metric reported, to tell two kinds of run of one
	// sub-benchmark apart.
	suffix   string
	runs     int
	seconds  map[string]float64     // metric → sum over the runs
	each     map[string][]float64   // metric → its value in each run, for the spread
	requests map[requestKey]float64 // requests counted in the measured windows
	// guestWrites are the FloatingIP writes of the guest pass the watch showed in those windows.
	guestWrites float64
	// peakRSS is the operator process's peak resident memory in MiB, summed over the runs that
	// read it.
	peakRSS     float64
	peakRSSRuns int
}

func newConvergence(clusters int) *convergence {
	return &convergence{clusters: clusters, seconds: map[string]float64{}, each: map[string][]float64{}, requests: map[requestKey]float64{}}
}

// metric is name with the convergence's suffix.
func (c *convergence) metric(name string) string { return name + c.suffix }

// timings are the moments of one measured run.
type timings struct {
	start    time.Time // the timer started
	allExist time.Time // every guest's FloatingIP exists
	done     time.Time // every guest's FloatingIP holds an address
	settled  time.Time // settle returned (zero without settle)
}

// measure opens a window on the API server's audit log, starts the timer and runs act, which sets
// things in motion and returns the running operator; it waits until every guest's FloatingIP holds
// an address (failing if the operator exits), stops the timer, waits for settle (when given: what
// else the run waits for, such as every guest configured, before the window closes), adds the
// operator's requests the audit log shows in that window and checks from the API server that every
// guest holds an address of its own.
func (c *convergence) measure(b *testing.B, r *rancher.World, fips *fipWatch, guests []string, act func() *controlplane.Process, settle func(*controlplane.Process) time.Time) timings {
	window := openWindow(b, shared.Env.Audit)
	guestBefore := fips.guestWrites.Load()
	var t timings
	b.StartTimer()
	t.start = time.Now()
	p := act()
	t.allExist, t.done = waitConverged(b, p, fips, guests, 10*time.Minute)
	b.StopTimer()
	if settle != nil {
		t.settled = settle(p)
	}
	// The watch's count first: it lags the API server's, so a guest write may be missing from it,
	// never one the API server has not counted; the allocation path's figure errs high, not low.
	c.guestWrites += float64(fips.guestWrites.Load() - guestBefore)
	for k, v := range window.take(b) {
		c.requests[k] += v
	}
	if err := allAllocated(r, guests); err != nil {
		b.Fatal(err)
	}
	c.runs++
	return t
}

// time adds one run's duration to metric.
func (c *convergence) time(metric string, d time.Duration) {
	c.seconds[c.metric(metric)] += d.Seconds()
	c.each[c.metric(metric)] = append(c.each[c.metric(metric)], d.Seconds())
}

// spread says, for a metric of more than one run, its lowest, median and highest value: on a
// machine the operator shares with its API server, one run's figure is one draw.
func (c *convergence) spread(metric string) string {
	v := slices.Clone(c.each[c.metric(metric)])
	if len(v) < 2 {
		return ""
	}
	slices.Sort(v)
	median := v[len(v)/2]
	if len(v)%2 == 0 {
		median = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return fmt.Sprintf("%s over %d runs: lowest %.2f, median %.2f, highest %.2f (%.2fx)", c.metric(metric), len(v), v[0], median, v[len(v)-1], v[len(v)-1]/v[0])
}

// peak adds the peak resident memory of the operator process p so far (VmHWM) to the runs'
// figures; p must still run.
func (c *convergence) peak(b *testing.B, p *controlplane.Process) {
	bytes, err := p.PeakRSS()
	if err != nil {
		b.Fatalf("reading the operator's peak RSS: %v", err)
	}
	mib := float64(bytes) / (1 << 20)
	// Printed as well: a run that fails later reports no metric. The resident memory now, split
	// into what the process holds (anonymous: heap, stacks) and the pages of its own binary the
	// kernel keeps mapped (file-backed, shared with the page cache and reclaimable).
	anon, file := statusMiB(p, "RssAnon"), statusMiB(p, "RssFile")
	fmt.Printf("%s: operator peak RSS %.1f MiB (memory limit: %s); now %.1f MiB anonymous + %.1f MiB of its binary\n",
		b.Name(), mib, memoryLimitText(chartRuntimeEnv(b)), anon, file)
	c.peakRSS += mib
	c.peakRSSRuns++
}

// cpu adds the CPU time the operator process p has used since it started, and the CPU time of
// the whole machine (API server, etcd, the benchmark itself) since machineBefore was read at
// start, to the runs' figures: cpu-s-operator, cpu-s-machine, and machine-busy, the share of the
// machine's CPUs busy from start until now. p must still run.
func (c *convergence) cpu(b *testing.B, p *controlplane.Process, start time.Time, machineBefore time.Duration) {
	op, err := processCPU(p)
	if err != nil {
		b.Fatalf("reading the operator's CPU time: %v", err)
	}
	machine, cpus, err := machineCPU()
	if err != nil {
		b.Fatalf("reading the machine's CPU time: %v", err)
	}
	wall := time.Since(start)
	busy := (machine - machineBefore).Seconds() / (float64(cpus) * wall.Seconds())
	fmt.Printf("%s: operator CPU %.1f s, machine CPU %.1f s of %d CPUs × %.1f s (%.0f%% busy)\n",
		b.Name(), op.Seconds(), (machine - machineBefore).Seconds(), cpus, wall.Seconds(), 100*busy)
	c.time("cpu-s-operator", op)
	c.time("cpu-s-machine", machine-machineBefore)
	c.seconds[c.metric("machine-busy")] += busy
}

// mean is metric's mean over the runs.
func (c *convergence) mean(metric string) float64 {
	return c.seconds[c.metric(metric)] / float64(c.runs)
}

// perCluster is the mean number of requests per run and cluster that match.
func (c *convergence) perCluster(match func(requestKey) bool) float64 {
	var sum float64
	for k, v := range c.requests {
		if k.resource != "leases" && match(k) {
			sum += v
		}
	}
	return sum / float64(c.runs) / float64(c.clusters)
}

// report reports the mean of every time metric and, per cluster, the operator's requests the API
// server's audit log shows in the measured windows (leader-election leases excluded, every answer
// code included):
//
//	alloc-writes/cluster  POST, PUT, PATCH, DELETE on floatingips, floatingipranges,
//	                      floatingipallocations and their status
//	guest-status-writes/cluster
//	                      of those, the FloatingIP writes that changed only what the guest
//	                      pass writes (see guestFieldsOnly), as the watch showed them
//	alloc-path-writes/cluster
//	                      the difference: the allocation path's writes, its 409s included
//	alloc-reads/cluster   GET on those and on secrets
//	events/cluster        writes of Events
//	conflicts/cluster     requests answered 409 Conflict
//	throttled/cluster     requests answered 429 Too Many Requests (the API server's Priority and
//	                      Fairness; a client's own rate limiter never reaches the server)
//	writes/cluster        every write
//
// and prints the table of requests per cluster by verb, resource and code.
func (c *convergence) report(b *testing.B) {
	if c.runs == 0 {
		return
	}
	for metric, sum := range c.seconds {
		b.ReportMetric(sum/float64(c.runs), metric)
	}
	if c.peakRSSRuns > 0 {
		b.ReportMetric(c.peakRSS/float64(c.peakRSSRuns), c.metric("MiB-peak-rss"))
	}
	allocWrites := c.perCluster(func(k requestKey) bool { return k.write() && k.allocation() })
	guestWrites := c.guestWrites / float64(c.runs) / float64(c.clusters)
	b.ReportMetric(allocWrites, c.metric("alloc-writes/cluster"))
	b.ReportMetric(guestWrites, c.metric("guest-status-writes/cluster"))
	b.ReportMetric(allocWrites-guestWrites, c.metric("alloc-path-writes/cluster"))
	b.ReportMetric(c.perCluster(func(k requestKey) bool { return k.verb == "GET" && (k.allocation() || k.resource == "secrets") }), c.metric("alloc-reads/cluster"))
	b.ReportMetric(c.perCluster(func(k requestKey) bool { return k.write() && k.resource == "events" }), c.metric("events/cluster"))
	b.ReportMetric(c.perCluster(func(k requestKey) bool { return k.code == "409" }), c.metric("conflicts/cluster"))
	b.ReportMetric(c.perCluster(func(k requestKey) bool { return k.code == "429" }), c.metric("throttled/cluster"))
	b.ReportMetric(c.perCluster(requestKey.write), c.metric("writes/cluster"))
	b.ReportMetric(c.perCluster(func(requestKey) bool { return true }), c.metric("requests/cluster"))
	// Printed, not logged: the testing package keeps only the first 10 lines of a benchmark's log.
	fmt.Printf("%s: %s", b.Name(), c.table())
	for _, m := range []string{"s-to-converge", "cpu-s-operator", "s-to-guests-configured"} {
		if s := c.spread(m); s != "" {
			fmt.Printf("%s: %s\n", b.Name(), s)
		}
	}
}

// table lists the requests per run and cluster by verb, resource and code, most first; rows
// under 0.005 per cluster are summed into one line.
func (c *convergence) table() string {
	counts := map[requestKey]float64{}
	for k, v := range c.requests {
		if k.resource != "leases" {
			counts[k] = v
		}
	}
	return requestTable(fmt.Sprintf("the operator's requests of the management API server per cluster, from its audit log (N=%d, %d run(s)%s, leases excluded; flags from BENCH_OPERATOR_ARGS: %q)",
		c.clusters, c.runs, c.suffix, strings.Join(benchOperatorArgs(), " ")), counts, float64(c.runs*c.clusters))
}

// requestKey is one series of the API server's apiserver_request_total, less the labels the
// benchmarks do not tell apart (group, version, scope, component, dry_run).
type requestKey struct {
	verb, resource, subresource, code string
}

// write tells whether the verb changes something.
func (k requestKey) write() bool {
	switch k.verb {
	case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY":
		return true
	}
	return false
}

// allocation tells whether the request is on the allocation path: FloatingIPs, ranges, and
// (once they exist) FloatingIPAllocations, or their status.
func (k requestKey) allocation() bool {
	switch k.resource {
	case "floatingips", "floatingipranges", "floatingipallocations":
		return k.subresource == "" || k.subresource == "status"
	}
	return false
}

// path is resource/subresource; for a request not on a resource the path the API server names
// (/healthz, /livez, /readyz) or "(non-resource)" (/metrics, /version, discovery).
func (k requestKey) path() string {
	switch {
	case k.resource == "" && k.subresource != "":
		return k.subresource
	case k.resource == "":
		return "(non-resource)"
	case k.subresource == "":
		return k.resource
	}
	return k.resource + "/" + k.subresource
}

func (k requestKey) String() string { return k.verb + " " + k.path() + " " + k.code }

// apiRequests reads the API server's own count of the requests it answered since it started,
// apiserver_request_total, by verb, resource, subresource and code.
func apiRequests(b *testing.B, r *rancher.World) map[requestKey]float64 {
	raw, err := r.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("reading the API server's metrics: %v", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		b.Fatalf("parsing the API server's metrics: %v", err)
	}
	family, ok := families["apiserver_request_total"]
	if !ok {
		b.Fatal("the API server's metrics have no apiserver_request_total")
	}
	counts := map[requestKey]float64{}
	for _, m := range family.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		k := requestKey{verb: labels["verb"], resource: labels["resource"], subresource: labels["subresource"], code: labels["code"]}
		counts[k] += m.GetCounter().GetValue()
	}
	return counts
}

// waitConverged waits until every guest's FloatingIP holds an address, as the watch shows them,
// and returns when the last FloatingIP was created and when the last address was held. It fails
// at once if the operator p exits.
func waitConverged(b *testing.B, p *controlplane.Process, fips kubefipcontrollers.FloatingIPCache, guests []string, timeout time.Duration) (allExist, done time.Time) {
	// Each look asks the local cache only about the FloatingIPs not yet seen existing, or holding
	// an address, so that looking often costs the machine little however many guests there are:
	// the benchmark shares the CPUs with the API server it measures. allAllocated checks every
	// one from the API server afterwards.
	missing, waiting := slices.Clone(guests), slices.Clone(guests)
	err := rig.UntilEvery(20*time.Millisecond, timeout, "every FloatingIP holding an address", p.Exited, func() (bool, error) {
		now := time.Now()
		missing = slices.DeleteFunc(missing, func(name string) bool {
			_, err := fips.Get("c-m-"+name, name+"-kubevip")
			return err == nil
		})
		if len(missing) == 0 && allExist.IsZero() {
			allExist = now
		}
		waiting = slices.DeleteFunc(waiting, func(name string) bool {
			x, err := fips.Get("c-m-"+name, name+"-kubevip")
			return err == nil && suite.Allocated(x)
		})
		done = now
		return len(waiting) == 0, nil
	})
	if err != nil {
		b.Fatalf("%v: %d of %d FloatingIPs exist, %d hold an address; the operator's output ends:\n%s", err, len(guests)-len(missing), len(guests), len(guests)-len(waiting), rig.LastLines(p.Logs(), 60))
	}
	return allExist, done
}

// allAllocated checks, from the API server itself, that every guest has exactly one FloatingIP,
// holding an address no other guest holds.
func allAllocated(r *rancher.World, guests []string) error {
	list, err := r.FIPs.FloatingIP().List("", metav1.ListOptions{})
	if err != nil {
		return err
	}
	byNamespace := map[string][]v1.FloatingIP{}
	for _, x := range list.Items {
		byNamespace[x.Namespace] = append(byNamespace[x.Namespace], x)
	}
	holder := map[string]string{}
	for _, name := range guests {
		fips := byNamespace["c-m-"+name]
		if len(fips) != 1 || !suite.Allocated(&fips[0]) {
			return fmt.Errorf("guest %s has %d FloatingIPs, allocated: %v", name, len(fips), len(fips) == 1 && suite.Allocated(&fips[0]))
		}
		if other, dup := holder[fips[0].Status.IPAddress]; dup {
			return fmt.Errorf("%s is held by both %s and %s", fips[0].Status.IPAddress, other, name)
		}
		holder[fips[0].Status.IPAddress] = name
	}
	return nil
}

// teardown deletes the guests' provisioning clusters, waits until the operator deleted their
// FloatingIPs and released every address, and then deletes every other part of the guests (see
// rancher.World.RemoveGuest), so that the next run's operator lists what that run created and
// nothing of the runs before it.
func teardown(b *testing.B, r *rancher.World, rangeName string, s benchGuests) {
	if err := rig.Parallel(s.names, func(name string) error { return r.Prov.Delete(rancher.FleetNamespace, name, nil) }); err != nil {
		b.Fatal(err)
	}
	held := 0
	if !rig.Within(10*time.Minute, func() bool {
		held = len(suite.HeldIn(b, r.FIPs, rangeName))
		return held == 0
	}) {
		b.Fatalf("range %s still holds %d addresses after the clusters were deleted", rangeName, held)
	}
	if err := rig.Parallel(s.names, func(name string) error { return r.RemoveGuest(s.byName[name]) }); err != nil {
		b.Fatal(err)
	}
}

func deleteRange(b *testing.B, r *rancher.World, name string) {
	if err := r.FIPs.FloatingIPRange().Delete(name, nil); err != nil {
		b.Errorf("deleting range %s: %v", name, err)
	}
}

// deleteRangeAndWait deletes a range and waits until it is gone: the operator, which must still
// run, removes its finalizer.
func deleteRangeAndWait(b *testing.B, r *rancher.World, name string) {
	deleteRange(b, r, name)
	var err error
	if !rig.Within(2*time.Minute, func() bool {
		_, err = r.FIPs.FloatingIPRange().Get(name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}) {
		b.Fatalf("range %s still there 2 minutes after its deletion (%v)", name, err)
	}
}
