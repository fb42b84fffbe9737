package guestcluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"github.com/rancher/wrangler/v2/pkg/condition"
	helmchart "helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/controllers"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/helminstall"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/render"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/pkg/sharedread"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
	"github.com/kubefip/kube-fip-operator/test/rig/fakes"
)

const (
	testNS      = "c-m-abc"
	testCluster = "guest"
	testFleet   = "fleet-default"
	testAddr    = "10.0.0.7"
)

// must fails the test program on an error of the world's setup.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// holds is the allocation index: FloatingIP UID to the addresses it holds.
type holds map[string][]netip.Addr

func (h holds) HeldBy(_, uid string) []netip.Addr { return h[uid] }

// fakeGuest answers a pass as a guest cluster would; a nil func answers success.
type fakeGuest struct {
	check     func() (guest.Connection, error)
	daemonSet kubevipconfig.DaemonSetResult
	configMap func() (kubevipconfig.AddressesResult, error)
	release   func(rel helminstall.Release) (helminstall.Result, error)
	// pullSecret writes the image pull Secret; nil: created.
	pullSecret func(namespace, name string, data []byte) (kubevipconfig.PullSecretResult, error)
	provider   func() (kubevipconfig.ConfigMapRef, error)
	wroteTo    []kubevipconfig.ConfigMapRef
	wrote      []kubevipconfig.Addresses
	// serving is what the guest shows of what serves its addresses; nil: the operator's
	// kube-vip with one ready pod (where it installs one), and no Service.
	serving  func(name string) (kubevipconfig.Serving, error)
	restored int
	disabled int
	// harvester says whether Harvester's kube-vip can take over; nil: it can.
	harvester func() (kubevipconfig.HarvesterKubevip, string, error)
	// removed are the releases RemoveReleases was asked to take out; removeProblem, when set,
	// leaves them all.
	removed       []v1.GuestRelease
	removeProblem string
	// asked are the addresses each read of what serves them asked about.
	asked [][]netip.Addr
	// ingress answers EnsureIngress; nil: created. ingressed are the addresses it was asked for,
	// unIngressed how often RemoveIngress was called.
	ingress     func(addrs []netip.Addr) (kubevipconfig.IngressResult, string, error)
	ingressed   [][]netip.Addr
	unIngressed int
}

func (g *fakeGuest) EnsureIngress(_ context.Context, addrs []netip.Addr) (kubevipconfig.IngressResult, string, error) {
	g.ingressed = append(g.ingressed, addrs)
	if g.ingress != nil {
		return g.ingress(addrs)
	}
	return kubevipconfig.IngressCreated, "", nil
}

func (g *fakeGuest) RemoveIngress(context.Context) (bool, error) {
	g.unIngressed++
	return false, nil
}

func (g *fakeGuest) HarvesterKubevip(context.Context) (kubevipconfig.HarvesterKubevip, string, error) {
	if g.harvester != nil {
		return g.harvester()
	}
	return kubevipconfig.HarvesterKubevipServes, "", nil
}

func (g *fakeGuest) RemoveReleases(_ context.Context, releases []v1.GuestRelease) helminstall.Removal {
	g.removed = append(g.removed, releases...)
	if g.removeProblem != "" {
		return helminstall.Removal{Problems: []string{g.removeProblem}, Left: releases}
	}
	var done []string
	for _, r := range releases {
		done = append(done, "release "+r.Namespace+"/"+r.Name+" uninstalled")
	}
	return helminstall.Removal{Done: done}
}

func (g *fakeGuest) Credentials() []string { return []string{"guest-token-abcdef"} }

func (g *fakeGuest) Check(context.Context) (guest.Connection, error) {
	if g.check != nil {
		return g.check()
	}
	return guest.Connected, nil
}

func (g *fakeGuest) DisableHarvesterKubevip(context.Context) (kubevipconfig.DaemonSetResult, error) {
	g.disabled++
	return g.daemonSet, nil
}

func (g *fakeGuest) RestoreHarvesterKubevip(context.Context) (kubevipconfig.DaemonSetResult, error) {
	g.restored++
	return kubevipconfig.DaemonSetNotDisabled, nil
}

func (g *fakeGuest) Serving(_ context.Context, kubevip *kubevipconfig.KubevipRef, addrs []netip.Addr) (kubevipconfig.Serving, error) {
	g.asked = append(g.asked, addrs)
	name := ""
	if kubevip != nil {
		name = kubevip.Name
	}
	if g.serving != nil {
		return g.serving(name)
	}
	var s kubevipconfig.Serving
	if kubevip != nil {
		s.Kubevip = &kubevipconfig.DaemonSetState{Namespace: kubevip.Namespace, Name: name, Found: true, Observed: true, Desired: 1, Ready: 1}
	}
	return s, nil
}

func (g *fakeGuest) EnsureAddresses(_ context.Context, ref kubevipconfig.ConfigMapRef, want kubevipconfig.Addresses, _ bool) (kubevipconfig.AddressesResult, error) {
	g.wroteTo = append(g.wroteTo, ref)
	g.wrote = append(g.wrote, want)
	if g.configMap != nil {
		return g.configMap()
	}
	return kubevipconfig.AddressesResult{Result: kubevipconfig.ConfigMapCreated}, nil
}

func (g *fakeGuest) EnsurePullSecret(_ context.Context, namespace, name string, data []byte) (kubevipconfig.PullSecretResult, error) {
	if g.pullSecret != nil {
		return g.pullSecret(namespace, name, data)
	}
	return kubevipconfig.PullSecretCreated, nil
}

func (g *fakeGuest) EnsureRelease(_ context.Context, rel helminstall.Release) (helminstall.Result, error) {
	if g.release != nil {
		return g.release(rel)
	}
	return helminstall.Result{Outcome: helminstall.Installed}, nil
}

func (g *fakeGuest) ProviderConfigMap(context.Context, string, string) (kubevipconfig.ConfigMapRef, error) {
	if g.provider != nil {
		return g.provider()
	}
	return kubevipconfig.ConfigMapRef{Namespace: "kube-system", Name: chartvalues.ProviderConfigMapName}, nil
}

// world is one guest cluster as Rancher shows it, with its FloatingIP holding testAddr.
type world struct {
	fips *fakes.FloatingIPs
	// written are the status writes of every pass so far.
	written    []*v1.FloatingIP
	prov       *fakes.ProvisioningClusters
	mgmt       *fakes.ManagementClusters
	held       holds
	kept       *fakeKept // nil: nothing kept for the cluster
	secrets    []*corev1.Secret
	cfg        config.Config
	opts       options
	guest      *fakeGuest
	kubeconfig []byte // non-nil: the Secret holds it and the real guest.NewClient reads it
	settings   fakeSettings
	recorder   *record.FakeRecorder
	metrics    *metrics.Metrics
	// after is when the last pass said the next one is due.
	after time.Duration
	// ranges are the ranges the controller's cache holds; none unless a test puts some.
	ranges []*v1.FloatingIPRange
}

func newWorld() *world {
	f := &v1.FloatingIP{
		ObjectMeta: metav1.ObjectMeta{Name: testCluster + "-kubevip", Namespace: testNS, UID: "fip-uid",
			CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour)),
			Annotations:       map[string]string{v1.AnnotationClusterName: testCluster, v1.AnnotationFloatingIPRange: "r"}},
		Status: v1.FloatingIPStatus{IPAddress: testAddr, Range: "r"},
	}
	// As the allocation controller left it: holding its address, so that Ready follows the guest.
	v1.SetCondition(&f.Status, v1.Allocated, true, "Allocated", "holds "+testAddr)
	v1.SetReady(&f.Status)
	cfg := config.Default()
	cfg.KubevipGuestInstall = config.InstallDisabled
	return &world{
		fips: fakes.NewFloatingIPs(f),
		prov: fakes.NewProvisioningClusters(&provv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: testCluster, Namespace: testFleet},
			Status:     provv1.ClusterStatus{ClusterName: testNS, ClientSecretName: testCluster + "-kubeconfig"}}),
		mgmt: fakes.NewManagementClusters(&mgmtv3.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: testNS},
			Status: mgmtv3.ClusterStatus{Conditions: []mgmtv3.ClusterCondition{
				{Type: "Connected", Status: corev1.ConditionTrue}, {Type: "Ready", Status: corev1.ConditionTrue}}}}),
		held: holds{"fip-uid": {netip.MustParseAddr(testAddr)}},
		secrets: []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: testCluster + "-kubeconfig", Namespace: testFleet},
			Data: map[string][]byte{guest.KubeconfigKey: []byte("used by the fake guest only")}}},
		cfg: cfg,
		opts: options{GuestOptions: controllers.GuestOptions{Workers: 1, Timeout: time.Second, ChartPolicy: installpolicy.Default(), ServeGracePeriod: 2 * time.Minute},
			FleetNamespace: testFleet, Namespace: "kube-fip"},
		guest:    &fakeGuest{},
		settings: fakeSettings{values: map[string]string{guest.SettingInternalServerURL: "https://rancher.example.com"}},
		recorder: record.NewFakeRecorder(100),
		metrics:  metrics.New(),
	}
}

// fip is the world's first FloatingIP, the one newWorld made, as the cache shows it now.
func (w *world) fip(t *testing.T) *v1.FloatingIP {
	t.Helper()
	f, err := w.fips.Cache().Get(testNS, testCluster+"-kubevip")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// pass runs one guest pass over the world and returns the last status written for the FloatingIP
// named name (nil when none was written) and the Events recorded.
func (w *world) pass(t *testing.T, name string) (*v1.FloatingIP, []string) {
	t.Helper()
	var objs []*corev1.Secret
	objs = append(objs, w.secrets...)
	kube := fake.NewSimpleClientset()
	for _, s := range objs {
		if w.kubeconfig != nil && s.Name == testCluster+"-kubeconfig" {
			s = s.DeepCopy()
			s.Data = map[string][]byte{guest.KubeconfigKey: w.kubeconfig}
		}
		if _, err := kube.CoreV1().Secrets(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The pass writes to a copy of the world's FloatingIPs: every pass starts from the world as
	// the test made it.
	fips := fakes.NewFloatingIPs(w.fips.Objects()...)
	c := w.controller(fips, kube.CoreV1())
	w.after, _ = c.sync(context.Background(), testNS)
	w.written = append(w.written, fips.Written...)
	var events []string
	for len(w.recorder.Events) > 0 {
		events = append(events, <-w.recorder.Events)
	}
	var last *v1.FloatingIP
	for _, f := range w.written {
		if f.Name == name {
			last = f
		}
	}
	return last, events
}

// controller is the guest controller of the world, writing to fips and reading secrets.
func (w *world) controller(fips *fakes.FloatingIPs, secrets typedcorev1.SecretsGetter) *controller {
	return &controller{
		deps: deps{FloatingIPs: fips, Ranges: fakes.NewRanges(w.ranges...).Cache(), Alloc: worldAlloc{w.held, w.kept}, Provisioning: w.prov,
			Management: w.mgmt, Secrets: secrets, Settings: w.settings, Store: config.NewStore(w.cfg),
			Metrics: w.metrics, Recorder: w.recorder},
		opts:      w.opts,
		queue:     workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		addresses: sharedread.New[[]string](addressReuse, time.Now),
		connect: func(pass context.Context, t guest.Target) (guestAPI, error) {
			if w.kubeconfig != nil {
				return connectThroughRancher(nil, nil, time.Second)(pass, t)
			}
			return w.guest, nil
		},
	}
}

func reasonOf(f *v1.FloatingIP, c condition.Cond) (string, corev1.ConditionStatus, string) {
	if f == nil {
		return "", "", ""
	}
	cond, ok := v1.GetCondition(f.Status.Conditions, c)
	if !ok {
		return "", "", ""
	}
	return cond.Reason, cond.Status, cond.Message
}

// TestEveryGuestReason: each reason the guest pass can give the GuestConfigured and
// KubevipInstalled conditions, from the world that leads to it, with its Event.
func TestEveryGuestReason(t *testing.T) {
	panicking := func() (guest.Connection, error) { panic("malformed answer") }
	refusedKubeconfig := []byte("apiVersion: v1\nclusters:\n- name: c\n  cluster: {server: \"https://u:pw@rancher.example.com/k8s/clusters/c-m-abc\"}\n" +
		"contexts:\n- name: d\n  context: {cluster: c, user: u}\ncurrent-context: d\nusers:\n- name: u\n  user: {token: t}\n")
	install := func(w *world) { w.cfg.KubevipGuestInstall = config.InstallEnabled }
	for _, tc := range []struct {
		name    string
		setup   func(w *world)
		cond    condition.Cond
		reason  string
		status  corev1.ConditionStatus
		event   string // the start of one recorded Event; "" for none
		message string // a part of the condition's message
	}{
		{"not allocated after a pass", func(w *world) {
			delete(w.held, "fip-uid")
			must(w.fips.Edit(testNS, testCluster+"-kubevip", func(f *v1.FloatingIP) {
				v1.SetCondition(f, v1.GuestConfigured, true, v1.ReasonConfigured, "was configured")
			}))
		}, v1.GuestConfigured, v1.ReasonNotAllocated, corev1.ConditionFalse, "", "holds no address"},
		{"no provisioning cluster", func(w *world) { must(w.prov.Delete(testFleet, testCluster, nil)) },
			v1.GuestConfigured, v1.ReasonClusterNotFound, corev1.ConditionFalse, "Normal ClusterNotFound", "no provisioning cluster"},
		{"no management cluster", func(w *world) { must(w.mgmt.Delete(testNS, nil)) },
			v1.GuestConfigured, v1.ReasonClusterNotFound, corev1.ConditionFalse, "Normal ClusterNotFound", "no management cluster"},
		{"provisioning in Rancher", func(w *world) {
			must(w.mgmt.Edit("", testNS, func(m *mgmtv3.Cluster) { m.Status.Conditions = nil }))
		},
			v1.GuestConfigured, v1.ReasonProvisioning, corev1.ConditionFalse, "Normal Provisioning", "still provisioning"},
		{"disconnected in Rancher", func(w *world) {
			must(w.mgmt.Edit("", testNS, func(m *mgmtv3.Cluster) { m.Status.Conditions[0].Status = corev1.ConditionFalse }))
		},
			v1.GuestConfigured, v1.ReasonDisconnected, corev1.ConditionFalse, "Normal Disconnected", "not connected"},
		{"kubeconfig Secret missing", func(w *world) { w.secrets = nil },
			v1.GuestConfigured, v1.ReasonKubeconfigMissing, corev1.ConditionFalse, "Normal KubeconfigMissing", "does not exist"},
		{"kubeconfig key empty", func(w *world) { w.kubeconfig = []byte{} },
			v1.GuestConfigured, v1.ReasonKubeconfigMissing, corev1.ConditionFalse, "Normal KubeconfigMissing", "key " + guest.KubeconfigKey},
		{"kubeconfig invalid", func(w *world) { w.kubeconfig = []byte("{not yaml: [") },
			v1.GuestConfigured, v1.ReasonKubeconfigInvalid, corev1.ConditionFalse, "Warning KubeconfigInvalid", testCluster + "-kubeconfig"},
		{"kubeconfig refused", func(w *world) { w.kubeconfig = refusedKubeconfig },
			v1.GuestConfigured, v1.ReasonKubeconfigRefused, corev1.ConditionFalse, "Warning KubeconfigRefused", testCluster + "-kubeconfig"},
		{"kubeconfig of another server than Rancher's", func(w *world) {
			w.kubeconfig = []byte(strings.ReplaceAll(string(refusedKubeconfig), "u:pw@rancher.example.com", "evil.example:8443"))
		}, v1.GuestConfigured, v1.ReasonKubeconfigRefused, corev1.ConditionFalse, "Warning KubeconfigRefused", "not Rancher's cluster proxy URL"},
		{"kubeconfig while Rancher names no address", func(w *world) {
			w.kubeconfig = []byte(strings.ReplaceAll(string(refusedKubeconfig), "u:pw@", ""))
			w.settings.values = map[string]string{guest.SettingServerURL: ""}
		}, v1.GuestConfigured, v1.ReasonKubeconfigRefused, corev1.ConditionFalse, "Warning KubeconfigRefused", "settings are both empty"},
		{"Rancher's settings unreadable", func(w *world) { w.settings.err = errors.New("settings.management.cattle.io is forbidden") },
			v1.GuestConfigured, v1.ReasonRancherSettings, corev1.ConditionFalse, "", "reading Rancher's internal-server-url setting"},
		{"proxy says provisioning", func(w *world) { w.guest.check = func() (guest.Connection, error) { return guest.Provisioning, nil } },
			v1.GuestConfigured, v1.ReasonProvisioning, corev1.ConditionFalse, "Normal Provisioning", "503"},
		{"token refused", func(w *world) { w.guest.check = func() (guest.Connection, error) { return guest.Unauthorized, nil } },
			v1.GuestConfigured, v1.ReasonUnauthorized, corev1.ConditionFalse, "Warning Unauthorized", "401"},
		{"not cluster owner", func(w *world) { w.guest.check = func() (guest.Connection, error) { return guest.Forbidden, nil } },
			v1.GuestConfigured, v1.ReasonNotClusterOwner, corev1.ConditionFalse, "Warning NotClusterOwner", "cluster-owner"},
		{"unreachable", func(w *world) {
			w.guest.check = func() (guest.Connection, error) { return guest.Unreachable, errors.New("dial timeout") }
		}, v1.GuestConfigured, v1.ReasonDisconnected, corev1.ConditionFalse, "Normal Disconnected", "dial timeout"},
		{"panic in the pass", func(w *world) { w.guest.check = panicking },
			v1.GuestConfigured, v1.ReasonInternalError, corev1.ConditionFalse, "Warning InternalError", "malformed answer"},
		{"ConfigMap write fails", func(w *world) {
			w.guest.configMap = func() (kubevipconfig.AddressesResult, error) {
				return kubevipconfig.AddressesResult{}, errors.New("etcd is full")
			}
		}, v1.GuestConfigured, v1.ReasonConfigMapFailed, corev1.ConditionFalse, "Warning ConfigMapFailed", "etcd is full"},
		{"ConfigMap left alone", func(w *world) {
			w.guest.configMap = func() (kubevipconfig.AddressesResult, error) {
				return kubevipconfig.AddressesResult{Result: kubevipconfig.ConfigMapLeftAlone, LeftAlone: []string{kubevipconfig.GlobalCIDRKey}}, nil
			}
		}, v1.GuestConfigured, v1.ReasonConfigMapNotUpdated, corev1.ConditionFalse, "", "left as it is"},
		{"configured", nil, v1.GuestConfigured, v1.ReasonConfigured, corev1.ConditionTrue, "Normal Configured", "cidr-global " + testAddr + "/32"},
		{"Harvester's kube-vip disabled once ours is ready", func(w *world) { install(w); w.guest.daemonSet = kubevipconfig.DaemonSetDisabled },
			v1.GuestConfigured, v1.ReasonConfigured, corev1.ConditionTrue, "Normal " + v1.ReasonHarvesterKubevip, "cidr-global"},
		{"idle", nil, v1.Served, v1.ReasonIdle, corev1.ConditionTrue, "", "no LoadBalancer Service asks for " + testAddr},
		{"served", func(w *world) { w.guest.serving = services(nil, svc("ingress", testAddr, testAddr)) },
			v1.Served, v1.ReasonServed, corev1.ConditionTrue, "Normal " + v1.ReasonServed, "the status of default/ingress holds it"},
		{"asked, not yet served", func(w *world) { w.guest.serving = services(nil, svc("ingress", testAddr, "")) },
			v1.Served, v1.ReasonServePending, corev1.ConditionFalse, "", "default/ingress asks for " + testAddr},
		{"asked, not served past the grace period", func(w *world) {
			w.guest.serving = services(nil, svc("ingress", testAddr, ""))
			pendingSince(w, time.Now().Add(-2*time.Minute-time.Minute))
		}, v1.Served, v1.ReasonNotServed, corev1.ConditionFalse, "Warning " + v1.ReasonNotServed, "no kube-vip announced it"},
		{"kube-vip schedules no pod", func(w *world) {
			install(w)
			w.guest.serving = services(&kubevipconfig.DaemonSetState{Found: true, Observed: true})
		}, v1.Served, v1.ReasonKubevipNotScheduled, corev1.ConditionFalse, "Warning " + v1.ReasonKubevipNotScheduled, "match none of the guest's nodes"},
		{"kube-vip not ready past the grace period", func(w *world) {
			install(w)
			w.guest.serving = services(&kubevipconfig.DaemonSetState{Found: true, Observed: true, Desired: 1, Why: "pod x: container kube-vip is waiting: ImagePullBackOff"})
			pendingSince(w, time.Now().Add(-2*time.Minute-time.Minute))
		}, v1.Served, v1.ReasonKubevipNotReady, corev1.ConditionFalse, "Warning " + v1.ReasonKubevipNotReady, "ImagePullBackOff"},
		{"kube-vip gone", func(w *world) { install(w); w.guest.serving = services(&kubevipconfig.DaemonSetState{}) },
			v1.Served, v1.ReasonKubevipMissing, corev1.ConditionFalse, "Warning " + v1.ReasonKubevipMissing, "is not in the guest"},
		{"the read stopped short, no Service read holds the address", func(w *world) {
			w.guest.serving = limited("the guest has more than 200 kube-vip Services: only the first 200 were read", svc("ingress", testAddr, ""))
		}, v1.Served, v1.ReasonServedReadLimited, corev1.ConditionFalse, "Warning " + v1.ReasonServedReadLimited, "the read stopped short: the guest has more than 200"},
		{"the read stopped short, a Service read holds the address", func(w *world) {
			w.guest.serving = limited("the guest has more than 200 kube-vip Services: only the first 200 were read", svc("ingress", testAddr, testAddr))
		}, v1.Served, v1.ReasonServed, corev1.ConditionTrue, "Normal " + v1.ReasonServed, "the status of default/ingress holds it"},
		{"what serves unreadable", func(w *world) {
			w.guest.serving = func(string) (kubevipconfig.Serving, error) {
				return kubevipconfig.Serving{}, errors.New("services is forbidden")
			}
		}, v1.Served, v1.ReasonServedUnknown, corev1.ConditionFalse, "Warning " + v1.ReasonServedUnknown, "forbidden"},
		{"install not wanted", nil, v1.KubevipInstalled, v1.ReasonNotWanted, corev1.ConditionFalse, "", "disabled"},
		{"installed", install, v1.KubevipInstalled, v1.ReasonInstalled, corev1.ConditionTrue, "Normal Installed", "the provider reads kube-system/kubevip; chart kube-vip 0.9.9 was fetched from https://kube-vip.io/helm-charts, as the operator's image ships no bundled guest charts"},
		{"Helm fails", func(w *world) {
			install(w)
			w.guest.release = func(helminstall.Release) (helminstall.Result, error) {
				return helminstall.Result{}, errors.New("no matches for kind DaemonSet")
			}
		}, v1.KubevipInstalled, v1.ReasonHelmFailed, corev1.ConditionFalse, "Warning HelmFailed", "no matches for kind"},
		{"Helm fails with no provider installed", func(w *world) {
			install(w)
			w.guest.release = func(helminstall.Release) (helminstall.Result, error) {
				return helminstall.Result{}, errors.New("no matches for kind DaemonSet")
			}
			w.guest.provider = func() (kubevipconfig.ConfigMapRef, error) {
				return kubevipconfig.ConfigMapRef{}, errors.New("no release")
			}
		}, v1.GuestConfigured, v1.ReasonHelmFailed, corev1.ConditionFalse, "Warning HelmFailed", "not installed, so the address is not written"},
		{"kube-vip values refused as rendered", func(w *world) {
			install(w)
			w.cfg.Kubevip.Values = kubevipValues("plndr/kube-vip", "v0.6.4", "24")
			w.guest.release = rendered(nil)
		}, v1.KubevipInstalled, v1.ReasonKubevipRefused, corev1.ConditionFalse, "Warning " + v1.ReasonKubevipRefused, "cannot use env vip_subnet"},
		{"kube-vip values translated as rendered", func(w *world) {
			install(w)
			w.cfg.Kubevip.Values = kubevipValues("plndr/kube-vip", "v0.6.4", "32")
			w.guest.release = rendered(nil)
		}, v1.KubevipInstalled, v1.ReasonInstalled, corev1.ConditionTrue, "Normal " + v1.ReasonKubevipTranslated, "image plndr/kube-vip:v0.6.4 (kube-vip v0.6 to v0.8)"},
		{"a rendered object the chart may not create", func(w *world) {
			install(w)
			w.guest.release = rendered(&helmchart.File{Name: "templates/pod.yaml",
				Data: []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  namespace: kube-system\n")})
		}, v1.KubevipInstalled, v1.ReasonRenderRefused, corev1.ConditionFalse, "Warning " + v1.ReasonRenderRefused, "a Pod (v1), which is not a kind the kube-vip chart creates"},
		{"a foreign release of the configured name", func(w *world) {
			install(w)
			w.guest.release = func(rel helminstall.Release) (helminstall.Result, error) {
				return helminstall.Result{}, &helminstall.ForeignRelease{Namespace: rel.Namespace, Name: rel.Name, Chart: "harvester-cloud-provider", Want: rel.Chart}
			}
		}, v1.KubevipInstalled, v1.ReasonForeignRelease, corev1.ConditionFalse, "Warning " + v1.ReasonForeignRelease, `holds chart "harvester-cloud-provider"`},
		{"a release record that is not what its Secret says", func(w *world) {
			install(w)
			w.guest.release = func(rel helminstall.Release) (helminstall.Result, error) {
				return helminstall.Result{}, fmt.Errorf("reading release: %w", &helminstall.RecordRefused{Namespace: rel.Namespace,
					Secret: "sh.helm.release.v1." + rel.Name + ".v1", Why: `it holds release "victim"`})
			}
		}, v1.KubevipInstalled, v1.ReasonRecordRefused, corev1.ConditionFalse, "Warning " + v1.ReasonRecordRefused, `it holds release "victim"`},
		{"chart still fetching", func(w *world) {
			install(w)
			w.guest.release = func(helminstall.Release) (helminstall.Result, error) {
				return helminstall.Result{}, helminstall.ErrChartPending
			}
		}, v1.KubevipInstalled, v1.ReasonChartFetching, corev1.ConditionFalse, "", "still being fetched"},
		{"chart source not allowed", func(w *world) { install(w); w.cfg.Kubevip.RepoURL = "https://charts.example.com" },
			v1.KubevipInstalled, v1.ReasonChartSourceNotAllowed, corev1.ConditionFalse, "Warning " + v1.ReasonChartSourceNotAllowed, "charts.example.com"},
		{"chart values not allowed", func(w *world) {
			install(w)
			w.cfg.Kubevip.Values = map[string]interface{}{"image": map[string]interface{}{"repository": "registry.example.com/kube-vip"}}
		}, v1.KubevipInstalled, v1.ReasonChartValuesNotAllowed, corev1.ConditionFalse, "Warning " + v1.ReasonChartValuesNotAllowed, "image"},
		{"chart credentials missing", func(w *world) { install(w); w.opts.ChartCredentialsSecret = "chart-creds" },
			v1.KubevipInstalled, v1.ReasonChartCredentials, corev1.ConditionFalse, "", "kube-fip/chart-creds does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			if tc.setup != nil {
				tc.setup(w)
			}
			f, events := w.pass(t, testCluster+"-kubevip")
			reason, status, message := reasonOf(f, tc.cond)
			if reason != tc.reason || status != tc.status || !strings.Contains(message, tc.message) {
				t.Errorf("%s = %s/%s %q; want %s/%s saying %q", tc.cond, status, reason, message, tc.status, tc.reason, tc.message)
			}
			if tc.event != "" && !hasEvent(events, tc.event) {
				t.Errorf("Events %q; want one starting %q", events, tc.event)
			}
			if tc.cond == v1.GuestConfigured && tc.status == corev1.ConditionFalse {
				// Progress shows as Reconciling, a failure as Stalled, with the guest's reason.
				want, other := v1.Stalled, v1.Reconciling
				if strings.HasPrefix(tc.event, "Normal ") || tc.reason == v1.ReasonNotAllocated { // NotAllocated makes no Event
					want, other = v1.Reconciling, v1.Stalled
				}
				if c, ok := v1.GetCondition(f.Status.Conditions, want); !ok || c.Status != corev1.ConditionTrue || c.Reason != tc.reason {
					t.Errorf("%s = %+v, %v; want True with reason %s", want, c, ok, tc.reason)
				}
				if c, ok := v1.GetCondition(f.Status.Conditions, other); ok {
					t.Errorf("%s = %+v; want it absent", other, c)
				}
			}
			for _, e := range events {
				if strings.Contains(e, "guest-token-abcdef") || strings.Contains(message, "guest-token-abcdef") {
					t.Errorf("the guest's token reached an Event or a condition: %q", e)
				}
			}
		})
	}
}

// limited is what a guest shows whose read of Services stopped at a limit, after svcs.
func limited(why string, svcs ...kubevipconfig.ServiceState) func(string) (kubevipconfig.Serving, error) {
	read := services(nil, svcs...)
	return func(name string) (kubevipconfig.Serving, error) {
		s, err := read(name)
		s.Limited = why
		return s, err
	}
}

// services is a guest whose kube-vip DaemonSet is ds (none where the operator installs none, or
// ds nil: one ready pod) and whose kube-vip Services are svcs.
func services(ds *kubevipconfig.DaemonSetState, svcs ...kubevipconfig.ServiceState) func(string) (kubevipconfig.Serving, error) {
	return func(name string) (kubevipconfig.Serving, error) {
		s := kubevipconfig.Serving{Services: svcs}
		if name != "" {
			s.Kubevip = &kubevipconfig.DaemonSetState{Namespace: "kube-system", Name: name, Found: true, Observed: true, Desired: 1, Ready: 1}
			if ds != nil {
				d := *ds
				d.Namespace, d.Name = "kube-system", name
				s.Kubevip = &d
			}
		}
		return s, nil
	}
}

// svc is a Service of namespace default asking for asks and whose status holds holds ("": none).
func svc(name, asks, holds string) kubevipconfig.ServiceState {
	s := kubevipconfig.ServiceState{Namespace: "default", Name: name, Asks: []netip.Addr{netip.MustParseAddr(asks)}}
	if holds != "" {
		s.Holds = []netip.Addr{netip.MustParseAddr(holds)}
	}
	return s
}

// pendingSince makes the FloatingIP's grace period start at since.
func pendingSince(w *world, since time.Time) {
	must(w.fips.Edit(testNS, testCluster+"-kubevip", func(f *v1.FloatingIP) {
		f.Status.ServePendingSince = since.UTC().Format(time.RFC3339)
	}))
}

// TestEveryFloatingIPOfTheClusterIsWritten: the FloatingIPs naming one cluster are written to
// the guest in one pass — a second global address, an IPv6 one, one for a guest namespace — and
// each shows the outcome; one with an invalid guest namespace, or without an address, stays out
// with a reason of its own.
func TestEveryFloatingIPOfTheClusterIsWritten(t *testing.T) {
	w := newWorld()
	add := func(name, addr string, annotations map[string]string) {
		x := w.fip(t)
		x.Name, x.UID, x.CreationTimestamp = name, types.UID(name+"-uid"), metav1.Now()
		x.Status.IPAddress = addr
		for k, v := range annotations {
			x.Annotations[k] = v
		}
		w.fips.Add(x)
		if addr != "" {
			w.held[string(x.UID)] = []netip.Addr{netip.MustParseAddr(addr)}
		}
	}
	add("second", "10.0.0.9", nil)
	add("six", "fd00::9", nil)
	add("ingress", "10.0.0.10", map[string]string{v1.AnnotationGuestNamespace: "ingress-nginx"})
	add("bad-ns", "10.0.0.11", map[string]string{v1.AnnotationGuestNamespace: "Not_A_Namespace"})
	add("pending", "", nil)
	f, _ := w.pass(t, "second")
	if len(w.guest.wrote) != 1 {
		t.Fatalf("%d ConfigMap writes; want one for the whole cluster", len(w.guest.wrote))
	}
	got := w.guest.wrote[0]
	want := kubevipconfig.Addresses{
		Global:     []netip.Addr{netip.MustParseAddr(testAddr), netip.MustParseAddr("10.0.0.9"), netip.MustParseAddr("fd00::9")},
		Namespaced: map[string][]netip.Addr{"ingress-nginx": {netip.MustParseAddr("10.0.0.10")}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("wrote %v; want %v", got, want)
	}
	reason, status, message := reasonOf(f, v1.GuestConfigured)
	if reason != v1.ReasonConfigured || status != corev1.ConditionTrue || !strings.Contains(message, "cidr-global "+testAddr+"/32,10.0.0.9/32,fd00::9/128, cidr-ingress-nginx 10.0.0.10/32") {
		t.Errorf("the second FloatingIP: %s/%s %q; want Configured naming every pool", status, reason, message)
	}
	if f.Status.GuestAddresses != testAddr+",10.0.0.9,fd00::9,10.0.0.10 (ingress-nginx)" {
		t.Errorf("guestAddresses = %q", f.Status.GuestAddresses)
	}
	var bad *v1.FloatingIP
	for _, x := range w.written {
		if x.Name == "bad-ns" {
			bad = x
		}
	}
	if reason, _, _ := reasonOf(bad, v1.GuestConfigured); bad == nil || reason != v1.ReasonInvalidGuestNamespace {
		t.Errorf("a FloatingIP with an invalid guest namespace: %s; want %s", reason, v1.ReasonInvalidGuestNamespace)
	}
}

// TestNotAllocatedWritesNothingNew: a new FloatingIP without an address gets no guest condition
// (its Allocated condition says why), so the guest pass does not race the allocation's write.
func TestNotAllocatedWritesNothingNew(t *testing.T) {
	w := newWorld()
	delete(w.held, "fip-uid")
	if f, _ := w.pass(t, testCluster+"-kubevip"); f != nil {
		t.Errorf("a status was written: %+v", f.Status.Conditions)
	}
}

// TestPassesAreCounted: every pass over a cluster counts once, under the state it left the cluster
// in, so that an administrator (and a test) can tell that passes run and how they end.
func TestPassesAreCounted(t *testing.T) {
	w := newWorld()
	w.pass(t, testCluster+"-kubevip")
	w.pass(t, testCluster+"-kubevip")
	w.guest.check = func() (guest.Connection, error) { return guest.Unreachable, errors.New("no route") }
	w.pass(t, testCluster+"-kubevip")
	for state, want := range map[v1.GuestState]float64{v1.GuestStateConfigured: 2, v1.GuestStateDisconnected: 1} {
		if got := testutil.ToFloat64(w.metrics.GuestPasses.WithLabelValues(testCluster, "", string(state))); got != want {
			t.Errorf("passes ending %s: %v, want %v", state, got, want)
		}
	}
}

func hasEvent(events []string, prefix string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// kubevipValues are kube-vip chart values with an image and a vip_subnet.
func kubevipValues(repository, tag, subnet string) map[string]interface{} {
	return map[string]interface{}{"image": map[string]interface{}{"repository": repository, "tag": tag},
		"env": map[string]interface{}{"vip_subnet": subnet}}
}

// rendered is a guest whose Helm installs the chart stand-ins as the installer does: through the
// release's plan, which judges what they render. extra, when set, is one more template of the
// kube-vip chart.
func rendered(extra *helmchart.File) func(helminstall.Release) (helminstall.Result, error) {
	return func(rel helminstall.Release) (helminstall.Result, error) {
		ch := chartrepo.KubevipCloudProviderChart(config.DefaultKubevipCloudProviderChartVersion)
		if rel.Chart == "kube-vip" {
			ch = chartrepo.KubevipChart(config.DefaultKubevipChartVersion)
			if extra != nil {
				ch.Templates = append(ch.Templates, extra)
			}
		}
		a, err := rel.Plan.Approve(ch, render.Target{Name: rel.Name, Namespace: rel.Namespace, Revision: 1})
		if err != nil {
			return helminstall.Result{}, fmt.Errorf("installing %s: %w", rel.Chart, err)
		}
		return helminstall.Result{Outcome: helminstall.Installed, Approval: a, Applied: &helminstall.Applied{Revision: 1, Digest: a.Digest}}, nil
	}
}

// fakeSettings are Rancher's settings by name, or err for every read.
type fakeSettings struct {
	values map[string]string
	err    error
}

func (f fakeSettings) Get(_ context.Context, name string, _ metav1.GetOptions, _ ...string) (*unstructured.Unstructured, error) {
	if f.err != nil {
		return nil, f.err
	}
	v, ok := f.values[name]
	if !ok {
		return nil, apierrors.NewNotFound(guest.SettingResource().GroupResource(), name)
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "management.cattle.io/v3", "kind": "Setting",
		"metadata": map[string]interface{}{"name": name}, "value": v, "default": ""}}, nil
}
