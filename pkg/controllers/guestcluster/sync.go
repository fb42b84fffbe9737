package guestcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/controllers"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/helminstall"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// pass is one run of the guest operations for one FloatingIP; its outcome becomes the
// FloatingIP's guest conditions.
type pass struct {
	fip       *v1.FloatingIP
	prov      *provv1.Cluster
	cluster   string
	harvester string
	state     v1.GuestState
	guest     outcome
	kubevip   *outcome
	// inputs hashes what the pass works from; see inputsOf.
	inputs string
	// credentials are the secrets of the guest's kubeconfig, masked in every message of the pass.
	credentials []string
	// want is what the guest's ConfigMap gets from every FloatingIP of the cluster; written is
	// its rendering for the FloatingIPs' status once it is in place, and leftAlone the keys a
	// person wrote that the pass did not touch.
	want      kubevipconfig.Addresses
	written   string
	leftAlone []string
	// target is the ConfigMap the pass wrote, and has what it wanted there: "<target> has <keys>".
	target kubevipconfig.ConfigMapRef
	has    string
	// releases are the Helm releases the operator applied in the guest, as the cluster's
	// FloatingIPs remember them; releasesChanged says the pass learnt something new of them.
	releases        []v1.GuestRelease
	releasesChanged bool
	// recheck, when set, is how soon the cluster's next pass is due, before the usual interval:
	// something the pass waits for is expected soon.
	recheck time.Duration
	// installs says the operator keeps its own kube-vip in this guest; serving is what the guest
	// showed of what serves its addresses (servingErr why it could not be read), and served this
	// FloatingIP's verdict on it.
	installs   bool
	serving    *kubevipconfig.Serving
	servingErr string
	served     *served
	// kept are the addresses kept for the cluster that the pass asked the guest about (kept.go).
	kept []allocation.Kept
	// ingressAddrs are the addresses the guest's ingress controller is put on (ingress.go), and
	// ingress what the FloatingIPs holding them show; nil when nothing asks for it.
	ingressAddrs []netip.Addr
	ingress      *outcome
}

type outcome struct {
	ok      bool
	reason  string
	message string
}

// sync runs one pass for the guest cluster whose management cluster (and namespace) is ns, and
// says when to run the next. One cluster gets one pass at a time, led by the oldest FloatingIP
// naming it, and the pass writes the addresses of all of them at once: the global ones into
// cidr-global, those with a guest namespace into that namespace's pool. Every FloatingIP then
// shows the pass's outcome, unless it had its own reason to stay out (no address held, a guest
// namespace that cannot be).
func (c *controller) sync(ctx context.Context, ns string) (time.Duration, error) {
	fips, err := c.clusterFloatingIPs(ns)
	if err != nil {
		return 0, err
	}
	if len(fips) == 0 {
		return c.syncKept(ctx, ns)
	}
	cfg := c.Store.Get()
	var primary *pass
	var passes, members []*pass
	for _, f := range fips {
		p := &pass{fip: f, cluster: f.Annotations[v1.AnnotationClusterName], harvester: c.harvesterOf(f), inputs: c.inputsOf(f)}
		c.started.start(f, p.inputs)
		passes = append(passes, p)
		prov, stop := c.provisioningStop(ns, p.cluster)
		switch {
		case stop != nil:
			p.set(stop.state, stop.guest)
			continue
		case primary == nil:
			p.prov, primary = prov, p
		}
		members = append(members, p)
	}
	retry := errRetry // without a provisioning cluster in the cache (yet), no pass runs
	// soon is when a grace period of the guest's ends, for a look before the usual interval.
	var soon time.Duration
	if primary == nil {
		c.watches.Stop(ns)
	} else {
		// The pass runs as the oldest FloatingIP, for all of them.
		lead := *primary
		lead.want = c.guestAddresses(members)
		lead.releases = rememberedReleases(members)
		lead.ingressAddrs = c.ingressAddresses(members)
		start := time.Now()
		retry = c.runSafely(ctx, &lead, func(ctx context.Context) error { return c.run(ctx, cfg, &lead) })
		if lead.serving == nil && lead.servingErr == "" {
			// The pass did not get to read what serves: the guest is not reached, or not ready.
			c.watches.Stop(ns)
		}
		soon = lead.recheck
		c.Metrics.GuestOperationDuration.WithLabelValues(primary.harvester).Observe(time.Since(start).Seconds())
		now := time.Now()
		for _, m := range members {
			m.share(&lead)
			addr, held := c.heldAddress(m.fip)
			m.served = lead.servedOf(m, addr, held, now, c.opts.ServeGracePeriod)
			if held && slices.Contains(lead.ingressAddrs, addr) {
				m.ingress = lead.ingress
			}
			if m.served != nil && m.served.recheck > 0 && (soon == 0 || m.served.recheck < soon) {
				soon = m.served.recheck
			}
		}
	}
	for _, p := range passes {
		if err := c.record(p); err != nil {
			return 0, err
		}
	}
	if primary != nil {
		c.Metrics.GuestPasses.WithLabelValues(primary.cluster, primary.harvester, string(primary.state)).Inc()
	}
	if retry != nil {
		return 0, retry
	}
	if soon > 0 && soon < cfg.OperateGuestClusterInterval {
		return soon, nil
	}
	return cfg.OperateGuestClusterInterval, nil
}

// pruneMetrics removes the series of guest clusters no FloatingIP names any more: what they were
// is read from the series themselves, so that nothing needs remembering.
func (c *controller) pruneMetrics() {
	fips, err := c.FloatingIPs.Cache().List("", labels.Everything())
	if err != nil {
		return
	}
	named := map[string]bool{}
	for _, f := range fips {
		if f.DeletionTimestamp == nil {
			named[f.Annotations[v1.AnnotationClusterName]] = true
		}
	}
	for _, cluster := range c.Metrics.GuestClusters() {
		if !named[cluster] {
			c.Metrics.DeleteGuestCluster(cluster)
		}
	}
}

// clusterFloatingIPs are the FloatingIPs in ns that name a guest cluster, oldest first.
func (c *controller) clusterFloatingIPs(ns string) ([]*v1.FloatingIP, error) {
	all, err := c.FloatingIPs.Cache().List(ns, labels.Everything())
	if err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(all, func(f *v1.FloatingIP) bool {
		return f.DeletionTimestamp != nil || f.Annotations[v1.AnnotationClusterName] == ""
	})
	slices.SortFunc(out, func(a, b *v1.FloatingIP) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
	})
	return out, nil
}

// runSafely runs the pass p's steps; a panic on malformed input from a guest, a chart or Rancher
// becomes the pass's outcome, shown in the FloatingIP's conditions, and a retry with backoff. Other
// clusters' passes and the allocation controllers go on.
func (c *controller) runSafely(ctx context.Context, p *pass, steps func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			logrus.Errorf("guest cluster %s: the guest pass failed: %s", p.cluster, p.redact(fmt.Sprint(r)))
			p.set(v1.GuestStateError, outcome{reason: v1.ReasonInternalError,
				message: p.redact(fmt.Sprintf("the guest pass failed unexpectedly and is retried: %v", r))})
			err = errRetry
		}
	}()
	ctx, cancel := context.WithTimeoutCause(ctx, PassTimeout, errPassDeadline)
	defer cancel()
	return steps(ctx)
}

// PassTimeout bounds one guest pass, every Helm call included: room for both releases' installs,
// and a minute for the rest. A guest slower than that holds a guest worker no longer.
const PassTimeout = 2*helminstall.InstallTimeout + time.Minute

var errPassDeadline = fmt.Errorf("the guest pass took longer than %s", PassTimeout)

// run performs the steps; a non-nil result asks for a retry with backoff.
func (c *controller) run(ctx context.Context, cfg config.Config, p *pass) error {
	// Only an address the range records for its very FloatingIP goes to a guest: a duplicate or a
	// not yet allocated FloatingIP never does.
	if len(p.want.Global) == 0 && len(p.want.Namespaced) == 0 {
		p.set(v1.GuestStatePending, outcome{reason: v1.ReasonNotAllocated, message: "the FloatingIP holds no address yet; nothing is written to the guest cluster"})
		// The caches may lag the allocation that woke this pass: look again soon (cheap: no guest
		// is contacted until the address is held).
		return errRetry
	}
	mgmt, client, err := c.reach(ctx, p.fip.Namespace, p)
	if client == nil {
		return err
	}
	p.installs = cfg.KubevipGuestInstall.Wants(clusterLabels(p.prov.Labels, mgmt.Labels))
	target := kubevipconfig.DefaultConfigMap()
	if p.installs {
		k, ref, found := c.install(ctx, cfg, client, p)
		p.kubevip = &k
		if k.reason == v1.ReasonWaitingForHarvester {
			p.set(v1.GuestStatePending, k)
			return errRetry
		}
		if !found {
			// Where the provider will read is not known until it is installed.
			p.set(v1.GuestStateError, outcome{reason: k.reason, message: "kube-vip-cloud-provider is not installed, so the address is not written yet: " + k.message})
			return errRetry
		}
		target = ref
	} else {
		p.kubevip = &outcome{ok: false, reason: v1.ReasonNotWanted, message: fmt.Sprintf("kubevipGuestInstall is %s", cfg.KubevipGuestInstall)}
	}
	if err := c.writeConfigMap(ctx, client, p, target); err != nil {
		return err
	}
	c.ingress(ctx, client, p, clusterLabels(p.prov.Labels, mgmt.Labels))
	c.observe(ctx, client, p, cfg)
	c.takeOutIngress(ctx, client, p)
	p.ingressServed()
	c.settleKept(p)
	c.harvesterKubevip(ctx, client, p)
	if !p.installs && len(p.releases) > 0 {
		c.handOver(ctx, client, p)
	}
	if p.kubevip.reason == v1.ReasonHelmFailed || p.kubevip.reason == v1.ReasonChartFetching {
		return errRetry // the address is in place; the failed release is retried with backoff
	}
	return nil
}

// reach connects pass p to its guest, the cluster whose management cluster (and namespace) is ns,
// through Rancher's cluster proxy with the kubeconfig Rancher wrote for it, and checks that the
// guest answers its owner. Without a client, the pass's outcome says why, and the error whether to
// retry with backoff.
func (c *controller) reach(ctx context.Context, ns string, p *pass) (*mgmtv3.Cluster, guestAPI, error) {
	mgmt, stop := c.rancherStop(ns)
	if stop != nil {
		if stop.status >= 0 {
			c.setStatus(p, stop.status)
		}
		p.set(stop.state, stop.guest)
		return nil, nil, errRetry
	}
	secretName := secretNameOf(p.prov)
	secret, _, missing := c.readSecret(ctx, p, "the kubeconfig Secret", c.opts.FleetNamespace, secretName, v1.ReasonKubeconfigMissing, "")
	if missing != nil {
		p.set(v1.GuestStatePending, *missing)
		return nil, nil, errRetry
	}
	rancher, err := c.rancherAddresses(ctx)
	if err != nil {
		p.set(v1.GuestStatePending, outcome{reason: v1.ReasonRancherSettings, message: err.Error()})
		return nil, nil, errRetry
	}
	client, err := c.connect(ctx, guest.Target{Name: p.cluster, ClusterID: p.prov.Status.ClusterName,
		Kubeconfig: secret.Data[guest.KubeconfigKey], Rancher: rancher})
	if err != nil {
		p.set(v1.GuestStateError, kubeconfigOutcome(err, c.opts.FleetNamespace, secretName))
		return nil, nil, nil
	}
	p.credentials = client.Credentials()
	if !c.probe(ctx, client, p, secretName) {
		return nil, nil, errRetry
	}
	return mgmt, client, nil
}

// readSecret reads the Secret namespace/name afresh for pass p, and returns it with where it is
// ("<what> <namespace>/<name>"): one GET of each Secret a pass needs, as Secrets are never listed,
// watched or cached. A Secret that does not exist or cannot be read is an outcome of reason, its
// message ending with suffix. When the deployment names none (name ""), there is neither Secret
// nor outcome.
func (c *controller) readSecret(ctx context.Context, p *pass, what, namespace, name, reason, suffix string) (*corev1.Secret, string, *outcome) {
	if name == "" {
		return nil, "", nil
	}
	where := fmt.Sprintf("%s %s/%s", what, namespace, name)
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	secret, err := c.Secrets.Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, where, &outcome{reason: reason, message: where + " does not exist" + suffix}
	case err != nil:
		return nil, where, &outcome{reason: reason, message: where + " cannot be read: " + p.redact(err.Error()) + suffix}
	}
	return secret, where, nil
}

// stopped is where a pass stops before it contacts the guest, because Rancher's own objects say
// the guest cannot be configured yet: the guest state and outcome to show, and the value of
// kubefipoperator_guestcluster_status that goes with it (-1: none).
type stopped struct {
	state  v1.GuestState
	guest  outcome
	status float64
}

// rancherStop reads the management cluster of the guest in namespace ns from the cache: the
// cluster, or where a pass stops when Rancher has none, is still provisioning it or has lost its
// agent.
func (c *controller) rancherStop(ns string) (*mgmtv3.Cluster, *stopped) {
	mgmt, err := c.Management.Cache().Get(ns)
	if err != nil {
		return nil, &stopped{state: v1.GuestStatePending, status: -1, guest: outcome{reason: v1.ReasonClusterNotFound,
			message: fmt.Sprintf("Rancher has no management cluster %s (yet)", ns)}}
	}
	switch rancherState(mgmt) {
	case v1.GuestStateProvisioning:
		return mgmt, &stopped{state: v1.GuestStateProvisioning, status: metrics.GuestClusterProvisioning, guest: outcome{reason: v1.ReasonProvisioning,
			message: fmt.Sprintf("Rancher is still provisioning cluster %s (management cluster not yet Connected); configured once it is", ns)}}
	case v1.GuestStateDisconnected:
		return mgmt, &stopped{state: v1.GuestStateDisconnected, status: metrics.GuestClusterDown, guest: outcome{reason: v1.ReasonDisconnected,
			message: fmt.Sprintf("Rancher reports that the agent of cluster %s is not connected; retried when it is", ns)}}
	}
	return mgmt, nil
}

// provisioningStop reads the provisioning cluster named cluster from the cache: the cluster, or
// where a pass over FloatingIPs in namespace ns stops when no provisioning cluster of that name
// belongs to ns.
func (c *controller) provisioningStop(ns, cluster string) (*provv1.Cluster, *stopped) {
	prov, err := c.Provisioning.Cache().Get(c.opts.FleetNamespace, cluster)
	if err != nil || prov.Status.ClusterName != ns {
		return nil, &stopped{state: v1.GuestStatePending, status: -1, guest: outcome{reason: v1.ReasonClusterNotFound,
			message: fmt.Sprintf("no provisioning cluster %s/%s belongs to namespace %s", c.opts.FleetNamespace, cluster, ns)}}
	}
	return prov, nil
}

// firstStatus is controllers.FirstGuestStatus's function: on s, the status the allocator is
// about to write for f with its first address, the guest fields a pass over f would write at once,
// when the pass would stop before contacting the guest — the same outcome, from the same caches,
// with the inputs the FloatingIP then has — so that the pass that follows, which it queues, finds
// nothing to write. A FloatingIP the pass would carry further gets nothing.
func (c *controller) firstStatus(f *v1.FloatingIP, s *v1.FloatingIPStatus) *controllers.GuestEvent {
	cluster := f.Annotations[v1.AnnotationClusterName]
	if cluster == "" || f.DeletionTimestamp != nil {
		return nil
	}
	_, stop := c.provisioningStop(f.Namespace, cluster)
	if stop == nil {
		_, stop = c.rancherStop(f.Namespace)
	}
	if stop == nil {
		return nil
	}
	shown := *f
	shown.Status = *s
	// Redacted as record redacts every message: the same text, so the pass finds it unchanged.
	msg := redact.Text(stop.guest.message)
	s.GuestState = stop.state
	s.GuestInputs = c.inputsOf(&shown)
	v1.SetCondition(s, v1.GuestConfigured, false, stop.guest.reason, msg)
	// The status now shows the inputs, so no trigger would start the pass that must still run
	// (its metrics, the retries that notice the cluster connect): it is queued here.
	c.queue.Add(f.Namespace)
	// The Event record gives a guest condition that turns bad.
	return &controllers.GuestEvent{Type: v1.EventType(stop.guest.reason), Reason: stop.guest.reason,
		Message: fmt.Sprintf("guest cluster %s: %s", cluster, msg)}
}

// rancherState reads Rancher's own view of the cluster: Connected means the agent's tunnel is up;
// a cluster that has never been Ready (Rancher sets Ready=False/Disconnected only once the cluster
// was provisioned) is still being provisioned, not down.
func rancherState(m *mgmtv3.Cluster) v1.GuestState {
	var connected, ready bool
	var readyReason string
	for _, cond := range m.Status.Conditions {
		switch string(cond.Type) {
		case "Connected":
			connected = cond.Status == corev1.ConditionTrue
		case "Ready":
			ready, readyReason = cond.Status == corev1.ConditionTrue, cond.Reason
		}
	}
	switch {
	case connected:
		return v1.GuestStateConfigured
	case ready || readyReason == "Disconnected":
		return v1.GuestStateDisconnected
	default:
		return v1.GuestStateProvisioning
	}
}

// probe asks the guest for something only its owner may read and records what the answer means.
func (c *controller) probe(ctx context.Context, client guestAPI, p *pass, secretName string) bool {
	state, err := client.Check(ctx)
	switch state {
	case guest.Connected:
		c.setStatus(p, metrics.GuestClusterUp)
		c.countEvent(p, metrics.EventAPIConnection, metrics.StatusSuccess)
		return true
	case guest.Provisioning:
		c.setStatus(p, metrics.GuestClusterProvisioning)
		p.set(v1.GuestStateProvisioning, outcome{reason: v1.ReasonProvisioning,
			message: "Rancher's cluster proxy answers that the cluster is not provisioned yet (503 ClusterUnavailable)"})
		return false
	case guest.Unauthorized:
		p.set(v1.GuestStateError, outcome{reason: v1.ReasonUnauthorized, message: fmt.Sprintf(
			"Rancher refused the token of the kubeconfig Secret %s/%s (401); retried with the Secret as Rancher rewrites it", c.opts.FleetNamespace, secretName)})
	case guest.Forbidden:
		p.set(v1.GuestStateError, outcome{reason: v1.ReasonNotClusterOwner, message: fmt.Sprintf(
			"the guest refused the Rancher user of the kubeconfig Secret %s/%s (403 listing ConfigMaps in %s): it needs the cluster-owner role in this cluster",
			c.opts.FleetNamespace, secretName, guest.ProbeNamespace)})
	default:
		p.set(v1.GuestStateDisconnected, outcome{reason: v1.ReasonDisconnected,
			message: "the guest cluster does not answer through Rancher's cluster proxy: " + fmt.Sprint(err)})
	}
	c.setStatus(p, metrics.GuestClusterDown)
	c.countEvent(p, metrics.EventAPIConnection, metrics.StatusError)
	return false
}

// harvesterKubevip changes the Harvester cloud provider's kube-vip DaemonSet only where the
// operator's own kube-vip is installed and has a ready pod: then Harvester's is kept off every
// node, so that one kube-vip answers for the addresses. In a guest that does not (or no longer)
// want the operator's kube-vip, Harvester's is given back as it was, if the operator had kept it
// off; otherwise it is left alone.
func (c *controller) harvesterKubevip(ctx context.Context, client guestAPI, p *pass) {
	ready := p.kubevip.ok && p.serving != nil && p.serving.Kubevip != nil && p.serving.Kubevip.Ready > 0
	change, changed, reason, why := client.DisableHarvesterKubevip, kubevipconfig.DaemonSetDisabled, v1.ReasonHarvesterKubevip,
		"gave the Harvester cloud provider's kube-vip DaemonSet a node selector that keeps it off every node, as the operator's kube-vip is ready"
	switch {
	case !p.installs:
		change, changed, reason, why = client.RestoreHarvesterKubevip, kubevipconfig.DaemonSetRestored, v1.ReasonHarvesterKubevipRestored,
			"removed the node selector the operator had given the Harvester cloud provider's kube-vip DaemonSet, as the guest does not want the operator's kube-vip"
	case !ready:
		return
	}
	switch res, err := change(ctx); {
	case err != nil:
		logrus.Warnf("guest cluster %s: %s", p.cluster, p.redact(err.Error()))
	case res == changed:
		c.Recorder.Event(p.fip, v1.EventType(reason), reason, "guest cluster "+p.cluster+": "+why)
	}
}

// handOver takes the operator's kube-vip out of a guest that no longer wants it, once the Harvester
// cloud provider's kube-vip, given its nodes back by harvesterKubevip, has a ready pod: the releases
// the operator remembers applying there and its image pull Secret are uninstalled, and forgotten.
// Until then they stay, so that a kube-vip announces the addresses throughout, and the pass looks
// again after handOverRecheck; a guest without Harvester's kube-vip keeps the operator's, and is
// looked at again at the usual interval.
func (c *controller) handOver(ctx context.Context, client guestAPI, p *pass) {
	names := make([]string, 0, len(p.releases))
	for _, r := range p.releases {
		names = append(names, r.Namespace+"/"+r.Name)
	}
	pending := func(why string, soon bool) {
		p.kubevip = &outcome{reason: v1.ReasonHandOverPending, message: p.redact(fmt.Sprintf(
			"%s; the operator's releases %s stay installed until the Harvester cloud provider's kube-vip has a ready pod: %s",
			p.kubevip.message, strings.Join(names, ", "), why))}
		if soon {
			p.recheck = handOverRecheck
		}
	}
	state, why, err := client.HarvesterKubevip(ctx)
	switch {
	case err != nil:
		pending(err.Error(), true)
		return
	case state != kubevipconfig.HarvesterKubevipServes:
		pending(why, state == kubevipconfig.HarvesterKubevipStarting)
		return
	}
	removal := client.RemoveReleases(ctx, p.releases)
	if len(removal.Left) != len(p.releases) {
		p.releases, p.releasesChanged = removal.Left, true
	}
	if len(removal.Done) > 0 {
		c.Recorder.Event(p.fip, v1.EventType(v1.ReasonKubevipHandedOver), v1.ReasonKubevipHandedOver, p.redact(fmt.Sprintf(
			"guest cluster %s: the Harvester cloud provider's kube-vip has a ready pod and the guest no longer wants the operator's: %s",
			p.cluster, strings.Join(removal.Done, "; "))))
	}
	if len(removal.Problems) > 0 {
		pending("it has one, but the uninstall failed: "+strings.Join(removal.Problems, "; "), true)
	}
}

// handOverRecheck is how soon a pass looks again while a hand-over waits.
const handOverRecheck = 10 * time.Second

// writeConfigMap puts the address where the provider reads it.
func (c *controller) writeConfigMap(ctx context.Context, client guestAPI, p *pass, target kubevipconfig.ConfigMapRef) error {
	update, _ := strconv.ParseBool(p.fip.Annotations[v1.AnnotationUpdateConfigMap])
	res, err := client.EnsureAddresses(ctx, target, p.want, update)
	keys, _ := p.want.Keys() // guestAddresses let only valid entries in
	p.target, p.leftAlone, p.has = target, res.LeftAlone, fmt.Sprintf("%s has %s", target, describeKeys(keys))
	if err != nil {
		c.countEvent(p, metrics.EventConfigMapManagement, metrics.StatusError)
		p.set(v1.GuestStateError, outcome{reason: v1.ReasonConfigMapFailed, message: err.Error()})
		return errRetry
	}
	if res.Result == kubevipconfig.ConfigMapCreated || res.Result == kubevipconfig.ConfigMapUpdated {
		c.countEvent(p, metrics.EventConfigMapManagement, metrics.StatusSuccess)
		c.Recorder.Event(p.fip, v1.EventType(v1.ReasonConfigured), v1.ReasonConfigured, "guest cluster "+p.cluster+": "+p.has)
	}
	p.written = guestAddressesText(p.want)
	if slices.Contains(res.LeftAlone, kubevipconfig.GlobalCIDRKey) {
		p.set(v1.GuestStateConfigured, outcome{reason: v1.ReasonConfigMapNotUpdated,
			message: fmt.Sprintf("%s holds another address and annotation %s is not true; it was left as it is", target, v1.AnnotationUpdateConfigMap)})
		return nil
	}
	p.set(v1.GuestStateConfigured, outcome{ok: true, reason: v1.ReasonConfigured, message: p.has})
	return nil
}

// describeKeys names the keys written and their values: "cidr-global 10.0.0.5/32", the global
// pool first.
func describeKeys(keys map[string]string) string {
	names := slices.Sorted(maps.Keys(keys))
	if i := slices.Index(names, kubevipconfig.GlobalCIDRKey); i > 0 {
		names = slices.Insert(slices.Delete(names, i, i+1), 0, kubevipconfig.GlobalCIDRKey)
	}
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, k+" "+keys[k])
	}
	return strings.Join(parts, ", ")
}

// guestAddressesText renders want for a FloatingIP's status: the global addresses, then each
// namespace's followed by the namespace in parentheses.
func guestAddressesText(want kubevipconfig.Addresses) string {
	var parts []string
	add := func(addrs []netip.Addr, suffix string) {
		sorted := slices.Clone(addrs)
		slices.SortFunc(sorted, netip.Addr.Compare)
		for _, a := range slices.Compact(sorted) {
			parts = append(parts, a.String()+suffix)
		}
	}
	add(want.Global, "")
	for _, ns := range slices.Sorted(maps.Keys(want.Namespaced)) {
		add(want.Namespaced[ns], " ("+ns+")")
	}
	return strings.Join(parts, ",")
}

// guestAddresses collects what the guest's ConfigMap gets from the cluster's FloatingIPs: the
// address each holds, in the global pool or in its guest namespace's. A FloatingIP that holds no
// address, or names a guest namespace no pool can be written for, is left out with a reason of
// its own.
func (c *controller) guestAddresses(members []*pass) kubevipconfig.Addresses {
	want := kubevipconfig.Addresses{Namespaced: map[string][]netip.Addr{}}
	for _, m := range members {
		addr, ok := c.heldAddress(m.fip)
		if !ok {
			m.set(v1.GuestStatePending, outcome{reason: v1.ReasonNotAllocated, message: "the FloatingIP holds no address yet; nothing of it is written to the guest cluster"})
			continue
		}
		ns, named := m.fip.Annotations[v1.AnnotationGuestNamespace]
		if !named {
			want.Global = append(want.Global, addr)
			continue
		}
		if !kubevipconfig.IsNamespacePool(ns) {
			m.set(v1.GuestStateError, outcome{reason: v1.ReasonInvalidGuestNamespace, message: fmt.Sprintf(
				"annotation %s is %s, which is not a namespace name of the guest (a DNS-1123 label other than %q); the address is not written to the guest",
				v1.AnnotationGuestNamespace, redact.Quote(ns, redact.MaxValue), kubevipconfig.GlobalPool)})
			continue
		}
		want.Namespaced[ns] = append(want.Namespaced[ns], addr)
	}
	return want
}

// share gives m the outcome of the pass lead ran for its cluster, unless m stayed out of it with
// a reason of its own, or its guest namespace's pool was a person's and left alone.
func (m *pass) share(lead *pass) {
	m.releases, m.releasesChanged = lead.releases, lead.releasesChanged
	if m.guest.reason != "" {
		return
	}
	m.set(lead.state, lead.guest)
	m.kubevip, m.credentials, m.written = lead.kubevip, lead.credentials, lead.written
	ns, named := m.fip.Annotations[v1.AnnotationGuestNamespace]
	if !named || lead.state != v1.GuestStateConfigured {
		return
	}
	// A namespace's pool is judged on its own: cidr-global left alone does not keep it out.
	if key := kubevipconfig.CIDRKey(ns); slices.Contains(lead.leftAlone, key) {
		m.set(lead.state, outcome{reason: v1.ReasonConfigMapNotUpdated, message: fmt.Sprintf(
			"%s of %s was written by someone else; it was left as it is, without this address", key, lead.target)})
	} else {
		m.set(lead.state, outcome{ok: true, reason: v1.ReasonConfigured, message: lead.has})
	}
}

// set records the pass's guest state and the GuestConfigured outcome that goes with it: the two
// are only ever set together.
func (p *pass) set(state v1.GuestState, guest outcome) {
	p.state, p.guest = state, guest
}

// kubeconfigOutcome is the guest condition for a kubeconfig guest.NewClient did not accept. The
// kubeconfig stays as it is until someone rewrites the Secret, which starts a new pass.
func kubeconfigOutcome(err error, namespace, secretName string) outcome {
	reason := v1.ReasonKubeconfigInvalid
	switch {
	case errors.Is(err, guest.ErrNoKubeconfig):
		reason = v1.ReasonKubeconfigMissing
	case errors.Is(err, guest.ErrKubeconfigRefused):
		reason = v1.ReasonKubeconfigRefused
	}
	return outcome{reason: reason, message: fmt.Sprintf("%s (Secret %s/%s, key %s)", redact.Error(err), namespace, secretName, guest.KubeconfigKey)}
}

// redact is text without the pass's guest credentials or any other credential it quotes, capped:
// what may go into an Event, a condition or a log line.
func (p *pass) redact(text string) string {
	return redact.Text(text, p.credentials...)
}

// errRetry asks the queue for a retry with backoff; the state is already recorded.
var errRetry = errors.New("guest cluster not ready")

// heldAddress is the FloatingIP's address if, and only if, its range records it for this object.
func (c *controller) heldAddress(f *v1.FloatingIP) (netip.Addr, bool) {
	for _, a := range c.Alloc.HeldBy(f.Annotations[v1.AnnotationFloatingIPRange], string(f.UID)) {
		if a.String() == f.Status.IPAddress {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// clusterLabels merges the provisioning and management clusters' labels; a label that parses as
// true on either wins.
func clusterLabels(sets ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, s := range sets {
		for k, v := range s {
			if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil && b {
				out[k] = v
			} else if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
	return out
}

func (c *controller) harvesterOf(f *v1.FloatingIP) string {
	r, err := c.Ranges.Get(f.Annotations[v1.AnnotationFloatingIPRange])
	if err != nil {
		return ""
	}
	return r.Annotations[v1.AnnotationHarvesterClusterName]
}

// setStatus sets the guest cluster's kubefipoperator_guestcluster_status. A pass over kept
// addresses alone (syncKept) has no FloatingIP, and its cluster no series.
func (c *controller) setStatus(p *pass, value float64) {
	if p.fip == nil {
		return
	}
	c.Metrics.GuestClusterStatus.WithLabelValues(p.cluster, p.harvester).Set(value)
}

// countEvent counts a guest operation in kubefipoperator_guestcluster_events.
func (c *controller) countEvent(p *pass, event, status string) {
	if p.fip == nil {
		return
	}
	c.Metrics.GuestClusterEvents.WithLabelValues(p.cluster, p.harvester, event, status).Inc()
}
