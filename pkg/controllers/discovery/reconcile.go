package discovery

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/controllers/floatingip"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
)

// waitingError says which object a cluster waits for. It is not a failure: the watch on that
// object (or, for a cloud credential, the credential retry) brings the cluster back when it
// appears, so it is logged at debug level only and never returned to the controller (which would
// log it as an error and retry with its own backoff).
type waitingError struct{ what string }

func (e *waitingError) Error() string { return "waits for " + e.what }

func waitFor(format string, args ...interface{}) error {
	return &waitingError{what: fmt.Sprintf(format, args...)}
}

// resolvedCluster is a guest cluster with everything its FloatingIP is made from.
type resolvedCluster struct {
	namespace string
	harvester string
	config    string
	network   harvester.Choice
	selection harvester.Selection
}

// OnClusterChange decides whether the provisioning cluster needs a FloatingIP and creates it.
// Imported, custom and non-Harvester clusters, clusters outside the fleet namespace and clusters
// whose namespace is not a c-m- namespace are passed over without a word. What each pass decided
// is logged at debug level.
func (h *handler) OnClusterChange(key string, c *provv1.Cluster) (*provv1.Cluster, error) {
	if namespace, _ := splitKey(key); namespace != h.c.FleetNamespace {
		return c, nil
	}
	decision, err := h.decide(key, c)
	if err == nil {
		logrus.Debugf("discovery: cluster %s: %s", key, decision)
	}
	return c, err
}

// decide is one pass of OnClusterChange, and says what it decided.
func (h *handler) decide(key string, c *provv1.Cluster) (string, error) {
	if c == nil || c.DeletionTimestamp != nil {
		return "removed", h.remove(key, c)
	}
	target := c.Status.ClusterName
	if !strings.HasPrefix(target, guestNamespacePrefix) {
		// Not known yet (Rancher sets it once the management cluster exists; the status update
		// brings the cluster back), or not a downstream cluster at all.
		h.forget(key)
		return "no guest cluster namespace (yet)", nil
	}
	if h.hasFloatingIP(target, c.Name) {
		h.forget(key)
		return "has its FloatingIP", nil
	}

	p, err := h.resolve(key, c)
	var problem *problem.Problem
	var waiting *waitingError
	switch {
	case errors.As(err, &problem):
		h.report(key, c, problem)
		return problem.Error(), nil
	case errors.As(err, &waiting):
		return waiting.Error(), nil
	case err != nil:
		return "", err
	case p == nil:
		return "not provisioned on Harvester", nil
	}
	return "FloatingIP created", h.create(key, c, p)
}

// hasFloatingIP reports whether the guest cluster already has a FloatingIP in its namespace: the
// one discovery names <cluster>-kubevip, or any other annotated with the cluster's name (made by
// hand, or by the original operator).
func (h *handler) hasFloatingIP(namespace, cluster string) bool {
	if _, err := h.c.FloatingIPs.Cache().Get(namespace, cluster+"-kubevip"); err == nil {
		return true
	}
	fips, err := h.c.FloatingIPs.Cache().GetByIndex(fipByGuestCluster, namespace+"/"+cluster)
	return err == nil && len(fips) > 0
}

// resolve finds what the cluster's FloatingIP is made from. It returns nil and no error for a
// cluster discovery has nothing to do with, a *problem.Problem for a value a person must fix, a
// *waitingError for an object still missing, and any other error for a failure worth a retry.
func (h *handler) resolve(key string, c *provv1.Cluster) (*resolvedCluster, error) {
	cp, ok, problem := harvester.ControlPlaneOf(c)
	if problem != nil {
		return nil, problem
	}
	if !ok {
		return nil, nil
	}
	p := &resolvedCluster{namespace: c.Status.ClusterName}
	ns, err := h.c.Namespaces.Cache().Get(p.namespace)
	switch {
	case apierrors.IsNotFound(err):
		return nil, waitFor("namespace %s", p.namespace)
	case err != nil:
		return nil, err
	case ns.DeletionTimestamp != nil:
		return nil, nil
	}
	if p.harvester, err = h.harvesterCluster(key, cp); err != nil {
		return nil, err
	}
	if p.network, err = h.network(cp); err != nil {
		return nil, err
	}
	p.config = cp.ConfigNamespace + "/" + cp.ConfigName
	if p.network.Note != nil {
		h.report(key, c, p.network.Note)
	}

	h.waiters.add(key, rangeDep(p.harvester))
	ranges, err := h.rangeInfos()
	if err != nil {
		return nil, err
	}
	sel, ok := harvester.SelectRange(ranges, p.harvester, p.network.Network)
	if note := sel.Explain(ok, p.harvester, p.network.Network); note != nil {
		if !ok {
			if h.report(key, c, note) {
				h.c.Metrics.DiscoveryNoRange.WithLabelValues(harvester.Clip(p.harvester)).Inc()
			}
			return nil, waitFor("a FloatingIPRange of Harvester cluster %s", p.harvester)
		}
		h.report(key, c, note)
	}
	p.selection = sel
	return p, nil
}

// rangeInfos lists the ranges that can take new FloatingIPs.
func (h *handler) rangeInfos() ([]harvester.Range, error) {
	all, err := h.c.Ranges.Cache().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]harvester.Range, 0, len(all))
	for _, r := range all {
		if r.DeletionTimestamp == nil {
			out = append(out, harvester.Range{
				Name:             r.Name,
				HarvesterCluster: r.Annotations[v1.AnnotationHarvesterClusterName],
				HarvesterNetwork: r.Annotations[v1.AnnotationHarvesterNetworkName],
			})
		}
	}
	return out, nil
}

// create makes the FloatingIP. Its fixed name makes a second create — by a second replica, or
// after a restart before the cache showed the first — fail with AlreadyExists instead of
// allocating a second address.
func (h *handler) create(key string, c *provv1.Cluster, p *resolvedCluster) error {
	fip := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{
		Name:      c.Name + "-kubevip",
		Namespace: p.namespace,
		Annotations: map[string]string{
			v1.AnnotationClusterName:         c.Name,
			v1.AnnotationFloatingIPRange:     p.selection.Range,
			v1.AnnotationUpdateConfigMap:     "true",
			v1.AnnotationProvisioningCluster: key,
		},
		// The FloatingIP controller's own finalizer, set at birth: that controller would otherwise
		// add it with an update of its own before claiming the address, one more write per cluster.
		Finalizers: []string{floatingip.Finalizer},
	}}
	var proposal netip.Addr
	rangeName := p.selection.Range
	cluster := v1.ClusterReference{Namespace: c.Namespace, Name: c.Name}
	retained := h.c.Alloc.RetainedFor(cluster)
	if rng, addr, ok := h.c.Alloc.Propose(p.selection.Range, fip.Namespace, fip.Name, cluster); ok {
		proposal, rangeName = addr, rng
		fip.Annotations[v1.AnnotationFloatingIPRange] = rng
		fip.Spec.IPAddress = addr.String()
		fip.Annotations[v1.AnnotationProposedAddress] = addr.String()
	}
	if _, err := h.c.FloatingIPs.Create(fip); err != nil {
		if proposal.IsValid() {
			h.c.Alloc.Withdraw(rangeName, proposal, fip.Namespace, fip.Name)
		}
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("creating FloatingIP %s/%s for guest cluster %s: %w", fip.Namespace, fip.Name, key, err)
	}
	h.forget(key)
	msg := fmt.Sprintf("created FloatingIP %s/%s from FloatingIPRange %s (Harvester cluster %s, network %s from HarvesterConfig %s, %s)",
		fip.Namespace, fip.Name, rangeName, harvester.Clip(p.harvester), p.network.Network, p.config, p.network.From)
	for _, r := range retained {
		if r.Range == rangeName && r.Addr == proposal {
			msg += fmt.Sprintf("; it gets back %s, retained for this cluster since an earlier cluster of this name was deleted", proposal)
		}
	}
	h.c.Recorder.Event(c, corev1.EventTypeNormal, ReasonFloatingIPCreated, msg)
	return nil
}

// report records a problem as a Warning Event on the cluster and a warning log line, once for as
// long as it stays the same. It reports whether it was new.
func (h *handler) report(key string, c *provv1.Cluster, p *problem.Problem) bool {
	if !h.recorded.isNew(key, p.Reason, p.Message) {
		return false
	}
	h.c.Recorder.Event(c, corev1.EventTypeWarning, p.Reason, p.Message)
	return true
}

// forget drops what discovery remembers of the cluster: it is done, or gone.
func (h *handler) forget(key string) {
	h.waiters.forget(key)
	h.recorded.forget(key)
	h.credentials.forget(key)
}
