package guestcluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/metrics"
)

// Guest states shown in status.guestState and as GuestConfigured reasons.
const (
	StatePending      = "Pending"
	StateProvisioning = "Provisioning"
	StateDisconnected = "Disconnected"
	StateConfigured   = "Configured"
	StateError        = "Error"

	ReasonNotAllocated        = "NotAllocated"
	ReasonClusterNotFound     = "ClusterNotFound"
	ReasonKubeconfigMissing   = "KubeconfigMissing"
	ReasonConfigMapNotUpdated = "ConfigMapNotUpdated"
	ReasonConfigMapFailed     = "ConfigMapFailed"
	ReasonHelmFailed          = "HelmFailed"
	ReasonInstalled           = "Installed"
	ReasonNotWanted           = "NotWanted"
	ReasonHarvesterKubevip    = "HarvesterKubevipDisabled"
)

// pass is one run of the guest operations for one FloatingIP; its outcome becomes the
// FloatingIP's guest conditions.
type pass struct {
	fip       *v1.FloatingIP
	cluster   string
	harvester string
	state     string
	guest     outcome
	kubevip   *outcome
}

type outcome struct {
	ok      bool
	reason  string
	message string
}

// sync runs one pass for the FloatingIP key and says when to run the next.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, _ := strings.Cut(key, "/")
	f, err := c.FloatingIPs.Cache().Get(ns, name)
	if apierrors.IsNotFound(err) || err == nil && f.DeletionTimestamp != nil {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	cluster := f.Annotations[v1.AnnotationClusterName]
	if cluster == "" {
		return 0, nil // not a guest cluster's FloatingIP
	}
	cfg := c.Store.Get()
	p := &pass{fip: f, cluster: cluster, harvester: c.harvesterOf(f)}
	start := time.Now()
	retry := c.run(ctx, cfg, p)
	c.Metrics.GuestOperationDuration.WithLabelValues(p.harvester).Observe(time.Since(start).Seconds())
	if err := c.record(p); err != nil {
		return 0, err
	}
	if retry != nil {
		return 0, retry
	}
	return cfg.OperateGuestClusterInterval, nil
}

// run performs the steps; a non-nil result asks for a retry with backoff.
func (c *Controller) run(ctx context.Context, cfg config.Config, p *pass) error {
	f := p.fip
	// Only an address the range records for this very object goes to a guest: a duplicate or a
	// not yet allocated FloatingIP never does.
	addr, ok := c.heldAddress(f)
	if !ok {
		p.state, p.guest = StatePending, outcome{reason: ReasonNotAllocated, message: "the FloatingIP holds no address yet; nothing is written to the guest cluster"}
		// The caches may lag the allocation that woke this pass: look again soon (cheap: no guest
		// is contacted until the address is held).
		return errRetry
	}

	prov, err := c.Provisioning.Cache().Get(c.opts.FleetNamespace, p.cluster)
	if err != nil || prov.Status.ClusterName != f.Namespace {
		p.state, p.guest = StatePending, outcome{reason: ReasonClusterNotFound,
			message: fmt.Sprintf("no provisioning cluster %s/%s belongs to namespace %s", c.opts.FleetNamespace, p.cluster, f.Namespace)}
		return errRetry
	}
	mgmt, err := c.Management.Cache().Get(f.Namespace)
	if err != nil || !connected(mgmt) {
		c.down(p, metrics.GuestClusterDown)
		p.state, p.guest = StateDisconnected, outcome{reason: StateDisconnected,
			message: fmt.Sprintf("Rancher does not report management cluster %s as Connected; retried when it does", f.Namespace)}
		return errRetry
	}
	secret, err := c.Secrets.Cache().Get(c.opts.FleetNamespace, secretNameOf(prov))
	if err != nil {
		p.state, p.guest = StatePending, outcome{reason: ReasonKubeconfigMissing,
			message: fmt.Sprintf("the kubeconfig Secret %s/%s is not there yet", c.opts.FleetNamespace, secretNameOf(prov))}
		return errRetry
	}
	client, err := guest.NewClient(p.cluster, secret.Data[guest.KubeconfigKey], c.opts.Timeout)
	if err != nil {
		p.state, p.guest = StateError, outcome{reason: ReasonKubeconfigMissing, message: err.Error()}
		return nil
	}

	switch state, err := client.Check(ctx); state {
	case guest.Provisioning:
		// Rancher answers Forbidden while it provisions the cluster: pending, not down.
		p.state, p.guest = StateProvisioning, outcome{reason: StateProvisioning, message: "the guest cluster is still being provisioned"}
		return errRetry
	case guest.Unreachable:
		c.down(p, metrics.GuestClusterDown)
		c.event(p, metrics.EventAPIConnection, metrics.StatusError)
		p.state, p.guest = StateDisconnected, outcome{reason: StateDisconnected, message: "the guest cluster does not answer through Rancher's cluster proxy: " + err.Error()}
		return errRetry
	}
	c.down(p, metrics.GuestClusterUp)
	c.event(p, metrics.EventAPIConnection, metrics.StatusSuccess)

	if res, err := client.DisableHarvesterKubevip(ctx); err != nil {
		logrus.Warnf("guest cluster %s: %v", p.cluster, err)
	} else if res == guest.DaemonSetDisabled {
		c.Recorder.Event(f, corev1.EventTypeNormal, ReasonHarvesterKubevip, "gave the Harvester cloud provider's kube-vip DaemonSet a node selector that keeps it off every node")
		logrus.Infof("guest cluster %s: disabled the Harvester cloud provider's kube-vip DaemonSet", p.cluster)
	}

	if cfg.KubevipGuestInstall.Wants(clusterLabels(prov.Labels, mgmt.Labels)) {
		k := c.install(ctx, cfg, client, p)
		p.kubevip = &k
	} else {
		p.kubevip = &outcome{ok: false, reason: ReasonNotWanted, message: fmt.Sprintf("kubevipGuestInstall is %s", cfg.KubevipGuestInstall)}
	}

	update := f.Annotations[v1.AnnotationUpdateConfigMap] == "true"
	res, err := client.EnsureConfigMap(ctx, cfg.KubevipNamespace, addr, update)
	target := cfg.KubevipNamespace + "/" + guest.KubevipConfigMap
	switch {
	case err != nil:
		c.event(p, metrics.EventConfigMapManagement, metrics.StatusError)
		p.state, p.guest = StateError, outcome{reason: ReasonConfigMapFailed, message: err.Error()}
		return errRetry
	case res == guest.ConfigMapLeftAlone:
		p.state, p.guest = StateConfigured, outcome{reason: ReasonConfigMapNotUpdated,
			message: fmt.Sprintf("%s holds another address and annotation %s is not \"true\"; it was left as it is", target, v1.AnnotationUpdateConfigMap)}
		return nil
	case res == guest.ConfigMapCreated || res == guest.ConfigMapUpdated:
		c.event(p, metrics.EventConfigMapManagement, metrics.StatusSuccess)
		c.Recorder.Eventf(f, corev1.EventTypeNormal, StateConfigured, "guest cluster %s: %s has %s %s", p.cluster, target, guest.GlobalCIDRKey, guest.CIDR(addr))
		logrus.Infof("guest cluster %s: %s has %s %s", p.cluster, target, guest.GlobalCIDRKey, guest.CIDR(addr))
	}
	p.state, p.guest = StateConfigured, outcome{ok: true, reason: StateConfigured, message: fmt.Sprintf("%s has %s %s", target, guest.GlobalCIDRKey, guest.CIDR(addr))}
	return nil
}

// errRetry asks the queue for a retry with backoff; the state is already recorded.
var errRetry = errors.New("guest cluster not ready")

// heldAddress is the FloatingIP's address if, and only if, its range records it for this object.
func (c *Controller) heldAddress(f *v1.FloatingIP) (netip.Addr, bool) {
	for _, a := range c.Alloc.HeldBy(f.Annotations[v1.AnnotationFloatingIPRange], string(f.UID)) {
		if a.String() == f.Status.IPAddress {
			return a, true
		}
	}
	return netip.Addr{}, false
}

func clusterLabels(sets ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, s := range sets {
		for k, v := range s {
			if _, ok := out[k]; !ok || v == "true" {
				out[k] = v
			}
		}
	}
	return out
}

func (c *Controller) harvesterOf(f *v1.FloatingIP) string {
	r, err := c.Ranges.Get(f.Annotations[v1.AnnotationFloatingIPRange])
	if err != nil {
		return ""
	}
	return r.Annotations[v1.AnnotationHarvesterClusterName]
}

func (c *Controller) down(p *pass, value float64) {
	c.Metrics.GuestClusterStatus.WithLabelValues(p.cluster, p.harvester).Set(value)
}

func (c *Controller) event(p *pass, event, status string) {
	c.Metrics.GuestClusterEvents.WithLabelValues(p.cluster, p.harvester, event, status).Inc()
}
