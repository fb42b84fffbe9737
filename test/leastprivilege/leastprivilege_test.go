package leastprivilege

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubefip/kube-fip-operator/pkg/operator"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/externaldns"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
	"github.com/kubefip/kube-fip-operator/test/rig/suite"
)

// Scenarios of the least-privilege suite, in the order a run goes through them.
const (
	scenarioStartupConfig      = "startup-config" // kube-fip-config is read before anything else
	scenarioLeader             = "leader-election"
	scenarioStart              = "start"   // caches sync, controllers run
	scenarioWebhook            = "webhook" // the API server's calls reach the admission webhook over TLS
	scenarioContention         = "contention"
	scenarioDiscovery          = "discovery"
	scenarioAllocation         = "allocation"
	scenarioDNS                = "dns-endpoints" // a range asking for names: DNSEndpoints created, changed, deleted
	scenarioGuest              = "guest"
	scenarioIngress            = "guest-ingress"       // a guest opting in by its label: the ingress Service written, then taken out
	scenarioHarvester          = "harvester"           // the Harvester cluster read through Rancher, by the controllers and the webhook
	scenarioFIPConflict        = "floatingip-conflict" // a guest pass writes status over a stale cache
	scenarioReload             = "config-reload"
	scenarioEvents             = "events"
	scenarioDeletion           = "cluster-deletion"
	scenarioAllocationConflict = "alloc-conflict" // another writer took the address a claim picked
	scenarioAllocationWatch    = "alloc-watch"    // the operator learns others' claims by watching
	scenarioRelease            = "release"        // a FloatingIP deleted by hand lets its address go
	scenarioRenewal            = "lease-renewal"
	scenarioNoRefusal          = "no-refusal"
)

// lpEnv runs the operator binary as the chart's ServiceAccount, with the chart's roles applied to
// the test API server: never as system:masters.
type lpEnv struct {
	t *testing.T
	// s is the control plane the operator runs against.
	s          *suite.Suite
	ns         string
	tag        string // names this test's objects apart from other tests'
	octet      int    // the second octet of this test's ranges
	rbac       *chartRBAC
	kubeconfig string
	kube       kubernetes.Interface
	dyn        dynamic.Interface
	r          *rancher.World
	proxy      *guests.ClusterProxy
	guest      *controlplane.Guest
	guestKube  kubernetes.Interface
	// api is the operator's way to the API server: it can hold back a watch, so that a scenario
	// can make the operator write from a stale cache and meet a conflict.
	api *controlplane.APIProxy
	// webhookPort is where the operator serves the admission webhook.
	webhookPort int
}

// newLPEnv renders the chart for release namespace ns, applies its ServiceAccount, roles and
// bindings, checks that the API server enforces them, and writes a kubeconfig holding a bound
// token of that ServiceAccount.
func newLPEnv(t *testing.T, s *suite.Suite, ns, tag string, octet int) *lpEnv {
	t.Helper()
	s.CreateNamespace(t, ns)
	e := &lpEnv{t: t, s: s, ns: ns, tag: tag, octet: octet, kube: s.Kube, dyn: dynamic.NewForConfigOrDie(s.Env.Config)}
	rig.Must(t, externaldns.InstallCRD(s.Env.Config))
	e.rbac = renderChartRBAC(t, s, e.ns)
	e.rbac.apply(t, nil)
	t.Cleanup(e.rbac.deleteAll)
	// The chart's webhook, failing open here: the runs' worlds are written while no operator runs.
	// The kube-fip-config rule is left out: the config-reload scenario must hand the operator a
	// bad value, which that rule refuses.
	e.webhookPort = rig.FreePort(t)
	ignore := map[string]interface{}{"floatingIPRanges": "Ignore", "floatingIPs": "Ignore", "config": "Ignore"}
	s.InstallWebhook(t, ns, webhookConfiguration, e.webhookPort, map[string]interface{}{"webhook": map[string]interface{}{"failurePolicy": ignore}},
		"config.kubefip.k8s.binbash.org")
	e.r = s.Rancher(t)
	e.proxy = s.StartClusterProxy(t)
	e.guest = s.StartGuest(t, strings.TrimPrefix(ns, "kube-fip-"))
	e.guestKube = kubernetes.NewForConfigOrDie(e.guest.Config)

	e.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	sa := e.rbac.serviceAccount
	if err := controlplane.ServiceAccountKubeconfig(s.Env.Config, sa.Namespace, sa.Name, e.kubeconfig, time.Hour); err != nil {
		t.Fatal(err)
	}
	// The operator reaches the API server through a proxy that passes its token on.
	token := controlplane.RESTConfigOf(t, e.kubeconfig).BearerToken
	api, err := controlplane.StartAPIProxy(s.Env.Config, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	e.api = api
	if err := api.WriteKubeconfig(e.kubeconfig, token); err != nil {
		t.Fatal(err)
	}
	// The API server must judge this identity by RBAC: as the ServiceAccount, reading Secrets in
	// kube-system is refused and reading FloatingIPs is not.
	as, err := kubernetes.NewForConfig(controlplane.RESTConfigOf(t, e.kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := as.CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{Limit: 1}); !apierrors.IsForbidden(err) {
		t.Fatalf("as the ServiceAccount, listing Secrets in kube-system: %v; want Forbidden (is RBAC enforced?)", err)
	}
	if _, err := as.CoreV1().ConfigMaps(e.ns).List(context.Background(), metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatalf("as the ServiceAccount, listing ConfigMaps in %s: %v", e.ns, err)
	}
	return e
}

// mayDo asks the API server's authorizer whether the chart's ServiceAccount may make the request
// g allows.
func (e *lpEnv) mayDo(g grant) bool {
	e.t.Helper()
	resource, sub, _ := strings.Cut(g.resource, "/")
	ns := g.namespace
	if g.clusterScoped {
		ns = "" // a cluster-wide request
	}
	ok, err := e.allowed(request{Namespace: ns, Verb: g.verb, Group: g.group, Resource: resource, Subresource: sub, Name: g.name})
	if err != nil {
		e.t.Fatal(err)
	}
	return ok
}

// waitAuthorizer waits until the authorizer's answer for g is allowed.
func (e *lpEnv) waitAuthorizer(g grant, allowed bool) {
	e.t.Helper()
	rig.Eventually(e.t, 30*time.Second, fmt.Sprintf("the authorizer to answer %v for %s", allowed, g), func() bool {
		return e.mayDo(g) == allowed
	})
}

// runResult is what one run of the scenarios showed.
type runResult struct {
	failed   string // the first scenario that failed; "" when all passed
	err      error
	refused  []string
	took     time.Duration
	logs     string
	scenario map[string]time.Duration // how long after the start each passed scenario passed
}

// startOperator runs the operator binary with the ServiceAccount's kubeconfig and, as the chart's
// Deployment does, the security settings of the chart's Secret. The leader
// election periods are short so that a renewal is seen within seconds.
func (e *lpEnv) startOperator() *controlplane.Process {
	e.t.Helper()
	env := []string{"CATTLE_ELECTION_LEASE_DURATION=20s", "CATTLE_ELECTION_RENEW_DEADLINE=15s", "CATTLE_ELECTION_RETRY_PERIOD=1s"}
	p, err := controlplane.StartOperator(e.s.Operator, nil, env, "--kubeconfig", e.kubeconfig, "--namespace", e.ns,
		"--metrics-bind-address", "127.0.0.1", "--metrics-port", fmt.Sprint(rig.FreePort(e.t)), "--log-level", "info",
		"--webhook-port", fmt.Sprint(e.webhookPort), "--webhook-hosts", "127.0.0.1", "--webhook-configuration", webhookConfiguration,
		"--harvester-read-interval", "2s", "--security-secret", suite.SecuritySecret, "--dns-endpoints=true") // as the Deployment chartValues render does
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// scenarioTimeout is how long one scenario may take after the one before it. With every grant,
// each passes within about a second (see TestLeastPrivilegeUnderChartRBAC's figures).
const scenarioTimeout = 45 * time.Second

// run prepares the run's world, starts the operator, walks the scenarios and stops at the first
// that fails.
func (e *lpEnv) run() runResult {
	e.t.Helper()
	w := e.newWorld()
	e.prepare()
	if err := w.createContended(); err != nil {
		e.t.Fatal(err)
	}
	start := time.Now()
	p := e.startOperator()
	res := runResult{scenario: map[string]time.Duration{}}
	for _, s := range e.scenarios(w, p) {
		if err := s.check(); err != nil {
			res.failed, res.err = s.name, err
			break
		}
		res.scenario[s.name] = time.Since(start)
	}
	res.took = time.Since(start)
	if err := p.Stop(20 * time.Second); err != nil {
		e.t.Log(err)
	}
	res.logs = p.Logs()
	res.refused = refusals(res.logs)
	if res.failed == "" && len(res.refused) > 0 {
		res.failed, res.err = scenarioNoRefusal, fmt.Errorf("the API server refused %s", strings.Join(res.refused, "; "))
	}
	w.cleanup()
	return res
}

// webhookConfiguration is the chart's ValidatingWebhookConfiguration, the one object of its kind
// the chart's roles let the operator update.
const webhookConfiguration = "kube-fip-operator"

// prepare resets what runs share: the Lease (so that the operator acquires it by creating it),
// kube-fip-config, the guest's kube-vip ConfigMap, and the webhook's Secret and caBundle as the
// chart creates them (empty), so that every run writes both.
func (e *lpEnv) prepare() {
	e.t.Helper()
	ctx := context.Background()
	secret, err := e.kube.CoreV1().Secrets(e.ns).Get(ctx, suite.WebhookSecret, metav1.GetOptions{})
	rig.Must(e.t, err)
	secret.Data = nil
	_, err = e.kube.CoreV1().Secrets(e.ns).Update(ctx, secret, metav1.UpdateOptions{})
	rig.Must(e.t, err)
	vwcs := e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	vwc, err := vwcs.Get(ctx, webhookConfiguration, metav1.GetOptions{})
	rig.Must(e.t, err)
	for i := range vwc.Webhooks {
		vwc.Webhooks[i].ClientConfig.CABundle = nil
	}
	_, err = vwcs.Update(ctx, vwc, metav1.UpdateOptions{})
	rig.Must(e.t, err)
	if err := e.kube.CoordinationV1().Leases(e.ns).Delete(ctx, operator.LeaseName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
	if err := e.kube.CoreV1().Events(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.writeConfig(map[string]string{"logLevel": "debug"})
	if err := e.guestKube.CoreV1().ConfigMaps("kube-system").Delete(ctx, "kubevip", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
}

// writeConfig replaces kube-fip-config's data with data plus the options every run keeps.
func (e *lpEnv) writeConfig(data map[string]string) {
	e.t.Helper()
	all := map[string]string{"kubevipGuestInstall": "disabled", "operateGuestClusterInterval": "3600"}
	for k, v := range data {
		all[k] = v
	}
	e.s.WriteOperatorConfig(e.t, e.ns, all)
}

// scenario is one named check of a run.
type scenario struct {
	name  string
	check func() error
}

// TestLeastPrivilegeUnderChartRBAC runs the operator binary authenticated as the chart's
// ServiceAccount — a bound token from the TokenRequest API — with the chart's rendered roles and
// bindings applied to the test API server, which enforces RBAC. Every scenario passes and the
// API server refuses the operator nothing: kube-fip-config read at start-up, the leader Lease
// acquired and renewed, caches synced, discovery of two Harvester guest clusters (cloud
// credentials in cattle-global-data and in fleet-default), allocation, the guest's ConfigMap
// written through the cluster proxy, a configuration reload, Events created and aggregated, and a
// deleted cluster's FloatingIP removed and its address retained for the cluster.
//
// Then every grant must be needed (RuleRemoval): the API server's own audit log holds each
// request the operator made in the run, and with each grant taken away in turn — each verb on
// each resource of each ClusterRole and Role — the API server's authorizer must refuse at least
// one of them. A grant without which it refuses none does not belong in the chart. The table of
// grants and the requests each one serves is printed.
func TestLeastPrivilegeUnderChartRBAC(t *testing.T) {
	begin := time.Now()
	e := newLPEnv(t, shared.Suite, "kube-fip-lp-suite", "s", 181)
	log := shared.Env.Audit
	from, err := log.End()
	if err != nil {
		t.Fatal(err)
	}
	res := e.run()
	if res.failed != "" {
		fmt.Fprintf(os.Stderr, "---- operator output (%s) ----\n%s\n", t.Name(), res.logs)
		t.Fatalf("scenario %s failed under the chart's RBAC: %v", res.failed, res.err)
	}
	for _, s := range e.scenarioNames() {
		if d, ok := res.scenario[s]; ok {
			t.Logf("%-16s passed %5.1fs after the operator started", s, d.Seconds())
		}
	}
	t.Logf("run %.1fs; suite including the setup %.1fs", res.took.Seconds(), time.Since(begin).Seconds())

	t.Run("RuleRemoval", func(t *testing.T) {
		requests := e.operatorRequests(log, from)
		if len(requests) == 0 {
			t.Fatal("the audit log holds no request of the operator's ServiceAccount")
		}
		checkEveryGrantNeeded(t, requests, e.ruleRemoval(requests))
	})
}
