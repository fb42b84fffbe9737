package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/repo"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/helminstall"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
)

// Hostile guests and hostile configuration, shown against real guest API servers with the operator
// binary running: what the tests in test/guestapi (ownership_test.go) and pkg/installpolicy show
// of the parts, here end to end (install_policy_test.go has the rest). That a release of another
// chart under kube-vip's name is left alone is shown in test/guestapi (TestForeignReleasesAreLeftAlone)
// and the reason it gives in pkg/controllers/guestcluster (TestEveryGuestReason).

// countingChartRepo is a chart repository on a loopback port that counts every request it gets,
// so that a test can show a chart was never even fetched.
type countingChartRepo struct {
	URL      string
	requests atomic.Int64
}

func startCountingChartRepo(t *testing.T, charts ...*chart.Chart) *countingChartRepo {
	t.Helper()
	dir := t.TempDir()
	r := &countingChartRepo{}
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		files.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	for _, c := range charts {
		if _, err := chartrepo.WriteArchive(c, dir); err != nil {
			t.Fatal(err)
		}
	}
	// The index lists the archives on this very server, so the downloads are counted too.
	index, err := repo.IndexDirectory(dir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	index.SortEntries()
	if err := index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

// defaultCharts are the stand-ins of the chart versions the operator installs by default.
func defaultCharts() []*chart.Chart {
	return []*chart.Chart{chartrepo.KubevipChart(config.DefaultKubevipChartVersion),
		chartrepo.KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion)}
}

// kubevipValuesWith is the operator's default kube-vip values, YAML, with edit applied: the
// injected string is then the only thing wrong with them, and the refusal must be about it.
func kubevipValuesWith(t *testing.T, edit func(map[string]interface{})) string {
	t.Helper()
	values := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(config.DefaultKubevipChartValues), &values); err != nil {
		t.Fatal(err)
	}
	edit(values)
	out, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// hostWorkloads describes every workload or Pod in the guest that shares the host's process or
// IPC namespace, mounts a host path, or runs a container other than kube-vip's own: what the
// injections would have put there.
func hostWorkloads(t *testing.T, gc *guestCluster) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	judge := func(what string, spec corev1.PodSpec) {
		if spec.HostPID || spec.HostIPC {
			out = append(out, what+" shares the host's PID or IPC namespace")
		}
		for _, v := range spec.Volumes {
			if v.HostPath != nil {
				out = append(out, fmt.Sprintf("%s mounts host path %s", what, v.HostPath.Path))
			}
		}
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			run := strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
			if strings.Contains(c.Image, "alpine") || strings.Contains(run, "chroot") {
				out = append(out, fmt.Sprintf("%s runs container %s (%s %s)", what, c.Name, c.Image, run))
			}
		}
	}
	apps := gc.direct.AppsV1()
	dss, err := apps.DaemonSets("").List(ctx, listAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range dss.Items {
		judge("DaemonSet "+x.Namespace+"/"+x.Name, x.Spec.Template.Spec)
	}
	deps, err := apps.Deployments("").List(ctx, listAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range deps.Items {
		judge("Deployment "+x.Namespace+"/"+x.Name, x.Spec.Template.Spec)
	}
	sts, err := apps.StatefulSets("").List(ctx, listAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range sts.Items {
		judge("StatefulSet "+x.Namespace+"/"+x.Name, x.Spec.Template.Spec)
	}
	jobs, err := gc.direct.BatchV1().Jobs("").List(ctx, listAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range jobs.Items {
		judge("Job "+x.Namespace+"/"+x.Name, x.Spec.Template.Spec)
	}
	pods, err := gc.direct.CoreV1().Pods("").List(ctx, listAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range pods.Items {
		judge("Pod "+x.Namespace+"/"+x.Name, x.Spec)
	}
	return out
}

// helmRecords are the Helm release records in every namespace of the guest matching selector
// (besides owner=helm).
func helmRecords(t *testing.T, gc *guestCluster, selector string) []corev1.Secret {
	t.Helper()
	if selector != "" {
		selector = "," + selector
	}
	list, err := gc.direct.CoreV1().Secrets("").List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm" + selector})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestGuestHostileInjectedValuesAreRefusedBeforeAnythingIsApplied: kubevipChartValues carrying
// an injection — a line break the kube-vip chart would print unquoted into its DaemonSet (a second
// container that chroots into the host through image.pullPolicy), the same behind U+2029 with twin
// keys a case-insensitive judge would read otherwise, a template that would read every Secret of
// the guest (lookup in extraArgs) — are each refused before anything is fetched or applied: the
// FloatingIP's KubevipInstalled is False with ChartValuesNotAllowed naming the key, a Warning Event
// says so, the chart repository gets not one request, and the guest holds no release record, no
// DaemonSet, and no workload sharing the host's PID namespace or mounting a host path. A Secret
// planted in the guest never shows in an Event, a condition or the log. With the default values
// the same guest gets the releases — so each "nothing there" above could have seen something.
// Every other form of injection is refused by the same check of the values, shown case by case
// in pkg/installpolicy (TestValuesOutsideTheSchemaAreRefused).
func TestGuestHostileInjectedValuesAreRefusedBeforeAnythingIsApplied(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	charts := startCountingChartRepo(t, defaultCharts()...)
	f := newFixture(t, "kube-fip-hinject")
	proxy := f.shard.StartClusterProxy(t)
	gc := rancherCluster(t, proxy, "hinject", "c-m-hinject1", nil, f.shard.StartGuest(t, "hinject"))
	f.extraNamespace(gc.id)

	// What the lookup would read, had the template ever been evaluated.
	planted := "planted-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-s3cret"
	_, err := gc.direct.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "hostile-planted", Namespace: "kube-system"},
		StringData: map[string]string{"token": planted},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name, at, want string
		edit           func(map[string]interface{})
	}{
		{"a second container chrooting into the host through image.pullPolicy", "image.pullPolicy", "image.pullPolicy holds a control or format character", func(v map[string]interface{}) {
			v["image"].(map[string]interface{})["pullPolicy"] = "IfNotPresent\n        name: kv\n      - image: docker.io/library/alpine:3.20\n        command: [sh, -c, 'chroot /host id']"
		}},
		{"a template listing every Secret of kube-system through extraArgs", "extraArgs", "extraArgs is not a value the operator supports", func(v map[string]interface{}) {
			v["extraArgs"] = map[string]interface{}{"leaseDuration": `{{ lookup "v1" "Secret" "kube-system" "" }}`}
		}},
		{"twin keys hostPID and hostpid behind U+2029", "priorityClassName", "priorityClassName", func(v map[string]interface{}) {
			v["priorityClassName"] = "system-node-critical\u2029      hostPID: true\u2029      hostpid: false"
		}},
	}
	withValues := func(values string) {
		data := map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled", "kubevipChartRepoUrl": charts.URL}
		if values != "" {
			data["kubevipChartValues"] = values
		}
		f.operatorConfig(data)
	}
	withValues(kubevipValuesWith(t, cases[0].edit))
	p, _ := f.operator()
	f.createRange("hinject", "10.181.0.0/28")
	f.createFIPIn(gc.id, "hinject-kubevip", "hinject", "10.181.0.2")

	for i, c := range cases {
		if i > 0 {
			withValues(kubevipValuesWith(t, c.edit))
		}
		// The message names the key that carries the injection, and says why.
		want := c.want
		x := f.waitFIPIn(gc.id, "hinject-kubevip", 60*time.Second, c.name+": KubevipInstalled=False ChartValuesNotAllowed naming "+c.at,
			func(x *v1.FloatingIP) bool {
				return kubevipReason(v1.ReasonChartValuesNotAllowed)(x) && strings.Contains(message(x.Status.Conditions, v1.KubevipInstalled), want)
			})
		if msg := message(x.Status.Conditions, v1.KubevipInstalled); !strings.Contains(msg, "kubevipChartValues") {
			t.Errorf("%s: the condition %q does not name the ConfigMap key", c.name, msg)
		}
		rig.Eventually(t, 30*time.Second, c.name+": a Warning Event ChartValuesNotAllowed on the FloatingIP naming "+c.at, func() bool {
			return f.shard.HasEvent(t, gc.id, "hinject-kubevip", corev1.EventTypeWarning, v1.ReasonChartValuesNotAllowed, want)
		})
		// The pass that wrote the refusal ran with these values and is over: had it, or any pass
		// before it, fetched or applied something, it would show now. (Waiting for more passes
		// would only wait out the backoff of a refused install, up to 30s a pass.)
		if n := charts.requests.Load(); n != 0 {
			t.Errorf("%s: the chart repository got %d requests; a refusal comes before any fetch", c.name, n)
		}
		if recs := helmRecords(t, gc, ""); len(recs) != 0 {
			t.Errorf("%s: %d Helm release records in the guest, the first %s/%s", c.name, len(recs), recs[0].Namespace, recs[0].Name)
		}
		dss, err := gc.direct.AppsV1().DaemonSets("").List(ctx, listAll())
		if err != nil {
			t.Fatal(err)
		}
		for _, ds := range dss.Items {
			t.Errorf("%s: DaemonSet %s/%s is in the guest", c.name, ds.Namespace, ds.Name)
		}
		for _, w := range hostWorkloads(t, gc) {
			t.Errorf("%s: %s", c.name, w)
		}
	}
	refused := time.Since(start)

	// Nothing the guest holds reached what people read.
	if texts := guestTexts(t, gc.id, f.ns); strings.Contains(texts, planted) {
		t.Error("the planted Secret's value is in an Event or condition")
	}
	if strings.Contains(p.Logs(), planted) {
		t.Error("the planted Secret's value is in the operator's log")
	}

	// The control: the same guest, operator and repository with the default values get both
	// releases, so the checks above were looking where an install lands.
	withValues("")
	f.waitFIPIn(gc.id, "hinject-kubevip", 90*time.Second, "KubevipInstalled=True with the default values", func(x *v1.FloatingIP) bool {
		return v1.KubevipInstalled.IsTrue(x)
	})
	if n := charts.requests.Load(); n == 0 {
		t.Error("the install with the default values made no request to the chart repository: the count above proves nothing")
	}
	if recs := helmRecords(t, gc, "status=deployed"); len(recs) != 2 {
		t.Errorf("%d deployed Helm releases with the default values; want 2", len(recs))
	}
	ds, err := gc.direct.AppsV1().DaemonSets("kube-system").Get(ctx, chartvalues.KubevipNameOverride, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("kube-vip's DaemonSet with the default values: %v", err)
	}
	if n := len(ds.Spec.Template.Spec.Containers); n != 1 {
		t.Errorf("kube-vip's DaemonSet has %d containers", n)
	}
	for _, w := range hostWorkloads(t, gc) {
		t.Errorf("with the default values: %s", w)
	}
	t.Logf("three injections refused in %s; installed with the default values after %s", refused.Round(100*time.Millisecond),
		time.Since(start).Round(100*time.Millisecond))
}

// operatorMemoryLimit is the memory limit the operator chart, rendered with its defaults, sets
// for the operator's container.
func operatorMemoryLimit(t *testing.T) resource.Quantity {
	t.Helper()
	for _, obj := range chartrepo.RenderOperatorChart(t, "kube-fip-hbomb", nil) {
		if obj.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			c, _ := c.(map[string]interface{})
			if c["name"] != "kube-fip-operator" {
				continue
			}
			raw, ok, _ := unstructured.NestedString(c, "resources", "limits", "memory")
			if !ok {
				t.Fatalf("the chart's operator container has no memory limit: %v", c["resources"])
			}
			q, err := resource.ParseQuantity(raw)
			if err != nil {
				t.Fatal(err)
			}
			return q
		}
	}
	t.Fatal("the rendered operator chart has no Deployment with a kube-fip-operator container")
	return resource.Quantity{}
}

// TestGuestHostileReleaseRecordBombLeavesOthersServed: guest A carries, before the operator
// starts, a record of the kube-vip release stored in well under a MiB whose gzip expands to
// 600 MiB. The operator reads it within bounds: guest B is installed and configured as if A were
// not there, A's FloatingIP says the record is too large, the process never exits, and its peak
// resident memory stays within the memory limit the operator chart gives its container.
func TestGuestHostileReleaseRecordBombLeavesOthersServed(t *testing.T) {
	ctx := context.Background()
	limit := operatorMemoryLimit(t)
	repo := chartrepo.ChartRepoForTest(t, defaultCharts()...)
	f := newFixture(t, "kube-fip-hbomb")
	proxy := f.shard.StartClusterProxy(t)
	a := rancherCluster(t, proxy, "hbomb-a", "c-m-hbomba01", nil, f.shard.StartGuest(t, "hbomb-a"))
	b := rancherCluster(t, proxy, "hbomb-b", "c-m-hbombb01", nil, f.shard.StartGuest(t, "hbomb-b"))
	f.extraNamespace(a.id)
	f.extraNamespace(b.id)

	const expanded = 600 << 20
	record, err := guests.ReleaseRecordBomb(expanded)
	if err != nil {
		t.Fatal(err)
	}
	bomb := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.kube-vip.v1", Namespace: "kube-system",
			Labels: map[string]string{"owner": "helm", "name": "kube-vip", "status": "deployed", "version": "1"}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": record},
	}
	// The request that creates it must be one the API server takes (3 MiB at most), or the test
	// would show nothing.
	body, err := json.Marshal(bomb)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) >= 3<<20 {
		t.Fatalf("the planted record's request is %d KiB, over the API server's 3 MiB", len(body)>>10)
	}
	if _, err := a.direct.CoreV1().Secrets("kube-system").Create(ctx, bomb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stored, err := a.direct.CoreV1().Secrets("kube-system").Get(ctx, bomb.Name, metav1.GetOptions{})
	if err != nil || len(stored.Data["release"]) != len(record) {
		t.Fatalf("the planted record was not stored whole: %v", err)
	}
	t.Logf("planted record: %d KiB stored (a %d KiB request), %d MiB once decompressed", len(record)>>10, len(body)>>10, expanded>>20)

	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled", "kubevipChartRepoUrl": repo.URL})
	start := time.Now()
	p, port := f.operator()
	f.createRange("hbomb", "10.183.0.0/28")
	f.createFIPIn(a.id, "hbomb-a-kubevip", "hbomb", "10.183.0.2")
	f.createFIPIn(b.id, "hbomb-b-kubevip", "hbomb", "10.183.0.3")

	b.waitCIDR(t, "10.183.0.3/32", 90*time.Second)
	f.waitFIPIn(b.id, "hbomb-b-kubevip", 30*time.Second, "guest B Configured", guestReason("Configured"))
	served := time.Since(start)
	x := f.waitFIPIn(a.id, "hbomb-a-kubevip", 60*time.Second, "guest A: KubevipInstalled=False saying the record is too large", func(x *v1.FloatingIP) bool {
		return v1.KubevipInstalled.IsFalse(x) && strings.Contains(message(x.Status.Conditions, v1.KubevipInstalled), helminstall.ErrReleaseRecordTooLarge.Error())
	})
	c, _ := v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled)
	t.Logf("guest A: KubevipInstalled=%s %s: %s", c.Status, c.Reason, c.Message)
	// More passes over both: A's read the record again, each time within bounds.
	waitGuestPasses(t, port, a, b)
	if !v1.GuestConfigured.IsTrue(f.getFIPIn(b.id, "hbomb-b-kubevip")) {
		t.Error("guest B is no longer Configured")
	}

	select {
	case <-p.Done():
		t.Fatalf("the operator exited; its output ends:\n%s", rig.LastLines(p.Logs(), 40))
	default:
	}
	peak, err := p.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	t.Logf("peak RSS %.1f MiB of the %.0f MiB limit (guest B configured %s after the start)", mib(peak), mib(limit.Value()),
		served.Round(100*time.Millisecond))
	if peak > limit.Value() {
		t.Errorf("the operator's peak RSS, %.1f MiB, is over the %s its chart allows", mib(peak), limit.String())
	}
	if strings.Contains(p.Logs(), "panic") {
		t.Errorf("the operator panicked:\n%s", rig.LastLines(p.Logs(), 40))
	}
}

// TestGuestHostileForgedRecordRunsNoHook: a guest carries a record of the kube-vip release forged
// as stuck in pending-install since 1970 (version 99), whose manifest lists a namespace of the
// guest's and whose pre-delete hook binds cluster-admin to a user. The operator recovers the
// release — its own is installed over the record, at revision 100 — without running the hook: the
// ClusterRoleBinding never appears (watched from before the operator starts), the namespace is
// still there and not being deleted, the real kube-vip release ends up deployed, remembered on
// the FloatingIP by its manifest's digest, and the forged record is left superseded without its
// manifest and hook.
func TestGuestHostileForgedRecordRunsNoHook(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	repo := chartrepo.ChartRepoForTest(t, defaultCharts()...)
	f := newFixture(t, "kube-fip-hforged")
	proxy := f.shard.StartClusterProxy(t)
	gc := rancherCluster(t, proxy, "hforged", "c-m-hforged1", nil, f.shard.StartGuest(t, "hforged"))
	f.extraNamespace(gc.id)

	const victim, binding, user = "forged-victim", "forged-admin", "mallory"
	if _, err := gc.direct.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: victim}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := gc.direct.CoreV1().ConfigMaps(victim).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "precious"},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hook := adminBindingHook(t, gc, binding, user)
	// Every ClusterRoleBinding that binds the user, from now on.
	bound := watchBindings(t, gc, binding, user)

	forged := &release.Release{Name: "kube-vip", Namespace: "kube-system", Version: 99,
		Chart:    chartrepo.KubevipChart(config.DefaultKubevipChartVersion),
		Info:     &release.Info{Status: release.StatusPendingInstall, LastDeployed: helmtime.Unix(0, 0)},
		Manifest: "---\n# Source: kube-vip/templates/namespace.yaml\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + victim + "\n",
		Hooks: []*release.Hook{{Name: binding, Kind: "ClusterRoleBinding", Path: "kube-vip/templates/hook.yaml", Manifest: string(hook),
			Events: []release.HookEvent{release.HookPreDelete}}}}
	if err := storage.Init(driver.NewSecrets(gc.direct.CoreV1().Secrets("kube-system"))).Create(forged); err != nil {
		t.Fatal(err)
	}

	f.operatorConfig(map[string]string{"operateGuestClusterInterval": "2", "kubevipGuestInstall": "enabled", "kubevipChartRepoUrl": repo.URL})
	_, port := f.operator()
	f.createRange("hforged", "10.184.0.0/28")
	f.createFIPIn(gc.id, "hforged-kubevip", "hforged", "10.184.0.2")

	// The real release: installed over the forged record, which the operator says it recovered.
	f.waitFIPIn(gc.id, "hforged-kubevip", 90*time.Second, "KubevipInstalled=True", func(x *v1.FloatingIP) bool {
		return v1.KubevipInstalled.IsTrue(x)
	})
	gc.waitCIDR(t, "10.184.0.2/32", 30*time.Second)
	rig.Eventually(t, 15*time.Second, "a Normal Event saying kube-vip was recovered", func() bool {
		return f.shard.HasEvent(t, gc.id, "hforged-kubevip", corev1.EventTypeNormal, v1.ReasonInstalled, "kube-system/kube-vip (chart kube-vip")
	})
	if !eventSoon(t, f.shard, gc.id, "hforged-kubevip", corev1.EventTypeNormal, v1.ReasonInstalled, string(helminstall.Recovered)) {
		t.Errorf("no Event says the release was recovered; the Events: %v", eventMessages(t, gc.id, "hforged-kubevip"))
	}
	waitGuestPasses(t, port, gc)

	// The operator's release is the newest record, above the forged one; Helm marked the forged
	// one superseded as the operator showed it: without its manifest or hooks, so that nobody can
	// run them later either.
	records := storage.Init(driver.NewSecrets(gc.direct.CoreV1().Secrets("kube-system")))
	last, err := records.Last("kube-vip")
	if err != nil || last.Version != 100 || last.Info.Status != release.StatusDeployed || last.Labels[helminstall.OwnerLabel] == "" {
		t.Errorf("the newest kube-vip record = %v, %v; want revision 100, deployed, the operator's", last, err)
	}
	old, err := records.Get("kube-vip", 99)
	if err != nil || old.Info.Status != release.StatusSuperseded || old.Manifest != "" || len(old.Hooks) != 0 {
		t.Errorf("the forged record afterwards = %+v, %v; want it superseded without manifest or hooks", old, err)
	}
	if !eventSoon(t, f.shard, gc.id, "hforged-kubevip", corev1.EventTypeWarning, v1.ReasonUntrustedRecord, "sh.helm.release.v1.kube-vip.v99") {
		t.Errorf("no Warning Event names the forged record; the Events: %v", eventMessages(t, gc.id, "hforged-kubevip"))
	}
	if _, err := gc.direct.AppsV1().DaemonSets("kube-system").Get(ctx, chartvalues.KubevipNameOverride, metav1.GetOptions{}); err != nil {
		t.Errorf("the real kube-vip DaemonSet: %v", err)
	}
	// What the operator applied is remembered on the management side, digest and all: the record
	// it trusts later is this one, not whatever the guest holds.
	x := f.waitFIPIn(gc.id, "hforged-kubevip", 30*time.Second, "status.kubevipReleases names both releases", func(x *v1.FloatingIP) bool {
		return len(x.Status.KubevipReleases) == 2
	})
	for _, r := range x.Status.KubevipReleases {
		if r.Name == "kube-vip" && (r.Revision != 100 || r.ManifestDigest != guestchart.Digest([]byte(last.Manifest))) {
			t.Errorf("remembered %+v; the guest's record is revision 100 with digest %s", r, guestchart.Digest([]byte(last.Manifest)))
		}
	}

	// The hook never ran.
	if _, err := gc.direct.RbacV1().ClusterRoleBindings().Get(ctx, binding, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRoleBinding %s: %v; want it never created", binding, err)
	}
	for _, b := range bound() {
		t.Errorf("a ClusterRoleBinding of user %s appeared: %s", user, b)
	}

	// The namespace the forged manifest lists is the guest's, not the release's: removing a record
	// read from the guest must not delete what that record claims. The guest API server runs no
	// namespace controller, so a deleted namespace stays, Terminating: what tells is its deletion
	// timestamp (in a real cluster everything in it would be gone).
	ns, err := gc.direct.CoreV1().Namespaces().Get(ctx, victim, metav1.GetOptions{})
	switch {
	case err != nil:
		t.Errorf("namespace %s, listed in the forged manifest: %v", victim, err)
	case ns.DeletionTimestamp != nil:
		t.Errorf("namespace %s, listed in the forged manifest, is being deleted (since %s): removing the stuck record deleted what its manifest lists",
			victim, ns.DeletionTimestamp.UTC().Format(time.RFC3339))
	}
	if _, err := gc.direct.CoreV1().ConfigMaps(victim).Get(ctx, "precious", metav1.GetOptions{}); err != nil {
		t.Errorf("the ConfigMap in %s: %v", victim, err)
	}
	t.Logf("forged record recovered and kube-vip installed in %s", time.Since(start).Round(100*time.Millisecond))
}

func eventMessages(t *testing.T, ns, name string) []string {
	t.Helper()
	var out []string
	for _, e := range shards.Of(t).Events(t, ns, name) {
		out = append(out, e.Type+" "+e.Reason+": "+e.Message)
	}
	return out
}
