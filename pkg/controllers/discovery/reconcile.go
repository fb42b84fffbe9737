package discovery

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubefip/kube-fip-operator/pkg/allocation"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/pkg/ipam"
	"github.com/kubefip/kube-fip-operator/pkg/problem"
	"github.com/kubefip/kube-fip-operator/pkg/redact"
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
	// passed says, by range chosen, why the ranges before it in selection order were passed over.
	passed map[string]string
}

// newFloatingIP is a FloatingIP discovery is to create: its name and range, and whether it is one
// of the two of a dual-stack cluster.
type newFloatingIP struct {
	name, rng string
	dualStack bool
}

// floatingIPName names the FloatingIPs discovery creates: <cluster>-kubevip, and for the second
// address of a dual-stack cluster <cluster>-kubevip-ipv4 or <cluster>-kubevip-ipv6, by its family.
// The fixed names make every create idempotent.
func floatingIPName(cluster string, second harvester.Family) string {
	if second == 0 {
		return cluster + "-kubevip"
	}
	return cluster + "-kubevip-" + strings.ToLower(second.String())
}

// OnClusterChange decides whether the provisioning cluster needs a FloatingIP and creates it.
// Imported, custom and non-Harvester clusters, clusters outside the fleet namespace and clusters
// whose namespace is not a c-m- namespace are passed over without a word. A dual-stack cluster
// gets a FloatingIP of each family. What each pass decided is logged at debug level.
func (h *handler) OnClusterChange(key string, c *provv1.Cluster) (*provv1.Cluster, error) {
	if namespace, _ := splitKey(key); namespace != h.fleetNamespace {
		return c, nil
	}
	decision, err := h.decide(key, c)
	if err == nil {
		logrus.Debugf("discovery: cluster %s: %s", key, decision)
	}
	return c, err
}

// decide is one pass of OnClusterChange, and says what it decided.
func (h *handler) decide(key string, c *provv1.Cluster) (decision string, err error) {
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
	stack := harvester.StackOf(c)
	if stack.Note != "" {
		// Why CIDR keys that say something of dual-stack were not taken for it: debug level only.
		defer func() { decision += " (" + stack.Note + ")" }()
	}
	var held heldFamilies
	if stack.DualStack {
		if held, err = h.familiesHeld(target, c.Name); err != nil {
			return "", err
		}
		switch {
		case held.complete():
			h.forget(key)
			return "has its FloatingIPs of both families (dual-stack)", h.checkNetworks(c, target)
		case held.unknown != "":
			// Its family decides which FloatingIP is missing; it becomes known when the
			// FloatingIP holds an address, whose update brings the cluster back.
			return fmt.Sprintf("dual-stack: waits for the address family of FloatingIP %s/%s (no range of a known family, no address)", target, held.unknown), nil
		}
	} else if h.hasFloatingIP(target, c.Name) {
		h.forget(key)
		return "has its FloatingIP", h.checkNetworks(c, target)
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
	return h.createMissing(key, c, p, stack.DualStack, held)
}

// createMissing creates what the cluster lacks. With no FloatingIP yet it gets <cluster>-kubevip
// from the range resolve picks, whatever that range's family. A dual-stack cluster then gets, for
// the family it holds no address of, <cluster>-kubevip-ipv4 or -ipv6 from a range of that family
// on its network. So a cluster that was single-stack, or was not seen as dual-stack, keeps its
// address and gains the other. A family without such a range is a Warning Event; the waiter on
// the Harvester cluster's ranges (resolve) brings the cluster back when one appears.
func (h *handler) createMissing(key string, c *provv1.Cluster, p *resolvedCluster, dualStack bool, held heldFamilies) (string, error) {
	var done []string
	if len(held.byFamily) == 0 {
		created, err := h.create(key, c, p, newFloatingIP{name: floatingIPName(c.Name, 0), rng: p.selection.Range, dualStack: dualStack})
		if err != nil || !dualStack {
			if created {
				h.forget(key)
			}
			return "FloatingIP created", err
		}
		first := h.familyOfRange(p.selection.Range)
		if first == 0 {
			return fmt.Sprintf("dual-stack: FloatingIP created; FloatingIPRange %s has no IPv4 or IPv6 CIDR, so the family of the second address is not known yet", p.selection.Range), nil
		}
		held.byFamily[first] = floatingIPName(c.Name, 0)
		done = append(done, first.String()+" FloatingIP created")
	}
	for _, f := range []harvester.Family{harvester.IPv4, harvester.IPv6} {
		if held.byFamily[f] != "" {
			continue
		}
		rng, refused := h.choose(c, p, f)
		if refused != nil {
			h.report(key, c, refused)
			which := "that selects the cluster"
			if refused.Reason == v1.ReasonNoRangeForFamily {
				which = fmt.Sprintf("of Harvester cluster %s on network %s", redact.Shorten(p.harvester, harvester.MaxQuoted), p.network.Network)
			}
			done = append(done, fmt.Sprintf("waits for an %s FloatingIPRange %s (%s)", f, which, refused.Reason))
			continue
		}
		if _, err := h.create(key, c, p, newFloatingIP{name: floatingIPName(c.Name, f), rng: rng, dualStack: true}); err != nil {
			return "", err
		}
		held.byFamily[f] = floatingIPName(c.Name, f)
		done = append(done, f.String()+" FloatingIP created")
	}
	if held.complete() {
		h.forget(key)
	}
	return "dual-stack: " + strings.Join(done, "; "), nil
}

// hasFloatingIP reports whether the guest cluster already has a FloatingIP in its namespace: one
// discovery names for it, or any other annotated with the cluster's name (made by hand, or by the
// original operator).
func (h *handler) hasFloatingIP(namespace, cluster string) bool {
	fips, err := h.clusterFloatingIPs(namespace, cluster)
	return err == nil && len(fips) > 0
}

// heldFamilies is what the FloatingIPs of a dual-stack cluster hold: by family, the name of one
// FloatingIP of it, and the name of one whose family is not known.
type heldFamilies struct {
	byFamily map[harvester.Family]string
	unknown  string
}

func (f heldFamilies) complete() bool {
	return f.byFamily[harvester.IPv4] != "" && f.byFamily[harvester.IPv6] != ""
}

// familiesHeld finds the families a dual-stack cluster's FloatingIPs hold: those discovery names,
// and any other annotated with the cluster's name, as hasFloatingIP counts them. A FloatingIP made
// by hand counts for the family of its range's CIDR, or else of its address: a hand-made IPv4 one
// stands for the cluster's IPv4 address, and only the IPv6 one is made.
func (h *handler) familiesHeld(namespace, cluster string) (heldFamilies, error) {
	fips, err := h.clusterFloatingIPs(namespace, cluster)
	if err != nil {
		return heldFamilies{}, err
	}
	held := heldFamilies{byFamily: map[harvester.Family]string{}}
	for _, f := range fips {
		switch family := h.familyOfFloatingIP(f); {
		case family == 0:
			held.unknown = f.Name
		case held.byFamily[family] == "" || f.Name < held.byFamily[family]:
			held.byFamily[family] = f.Name
		}
	}
	return held, nil
}

// familyOfFloatingIP is the family of the CIDR of the range a FloatingIP is held in (its status)
// or to be allocated from (its annotation), else of the address it holds or asks for; none when
// neither is known.
func (h *handler) familyOfFloatingIP(f *v1.FloatingIP) harvester.Family {
	for _, name := range []string{f.Status.Range, f.Annotations[v1.AnnotationFloatingIPRange]} {
		if family := h.familyOfRange(name); family != 0 {
			return family
		}
	}
	for _, a := range []string{f.Status.IPAddress, f.Spec.IPAddress} {
		if addr, err := netip.ParseAddr(strings.TrimSpace(a)); err == nil {
			return harvester.FamilyOfAddr(addr)
		}
	}
	return 0
}

// familyOfRange is the family of the CIDR of the range name; none when the range is not known.
func (h *handler) familyOfRange(name string) harvester.Family {
	if r, err := h.ranges.Cache().Get(name); err == nil {
		return harvester.FamilyOfCIDR(r.Spec.IPRange)
	}
	return 0
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
	p := &resolvedCluster{namespace: c.Status.ClusterName, passed: map[string]string{}}
	ns, err := h.namespaces.Cache().Get(p.namespace)
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
	note := sel.Explain(ok, p.harvester, p.network.Network)
	switch {
	case !ok && sel.Candidates == 0:
		if h.report(key, c, note) {
			h.metrics.DiscoveryNoRange.WithLabelValues(redact.Shorten(p.harvester, harvester.MaxQuoted)).Inc()
		}
		return nil, waitFor("a FloatingIPRange of Harvester cluster %s", p.harvester)
	case !ok:
		// Every range of the Harvester cluster names another network: no address of theirs is
		// any use to kube-vip. The waiter on the Harvester cluster's ranges brings the cluster
		// back when a range of its network, or one that names none, appears.
		h.report(key, c, note)
		return nil, waitFor("a FloatingIPRange of Harvester cluster %s on network %s (%s)",
			redact.Shorten(p.harvester, harvester.MaxQuoted), redact.Shorten(p.network.Network.String(), harvester.MaxQuoted), v1.ReasonNoRangeForNetwork)
	case note != nil:
		h.report(key, c, note)
	}
	p.selection = sel
	if sel.NetworkMatched {
		rng, refused := h.choose(c, p, 0)
		if refused != nil {
			return nil, refused
		}
		p.selection.Range = rng
	}
	return p, nil
}

// choose picks, among the ranges of p's Harvester cluster that name its network (of family f when
// set), the range of the cluster's new FloatingIP: the first in selection order with room for it,
// else the first that selects the cluster, where the FloatingIP waits and from which it moves on
// once another range has room. No range of family f there is NoRangeForFamily, no range
// selecting the cluster ClusterNotSelected; the waiter on the Harvester cluster's ranges, or a
// change of the cluster's labels, brings the cluster back.
func (h *handler) choose(c *provv1.Cluster, p *resolvedCluster, f harvester.Family) (string, *problem.Problem) {
	n := p.network.Network
	spaces := []v1.AddressSpace{{HarvesterClusterName: p.harvester, HarvesterNetworkName: n.Name}}
	if n.Namespace != "" {
		spaces = append(spaces, v1.AddressSpace{HarvesterClusterName: p.harvester, HarvesterNetworkName: n.String()})
	}
	choice := h.alloc.Choose(allocation.Want{Spaces: spaces, Family: f, Claimant: allocation.Claimant{
		Owner:   ipam.Owner{Namespace: p.namespace},
		Cluster: v1.ClusterReference{Namespace: c.Namespace, Name: c.Name},
		Labels:  c.Labels,
	}})
	switch {
	case choice.Range != "":
		if why := choice.Why(); why != "" {
			p.passed[choice.Range] = why
		}
		return choice.Range, nil
	case choice.First != "":
		return choice.First, nil
	case f != 0 && len(choice.Passed) == 0:
		return "", harvester.NoRangeForFamily(p.harvester, n, f)
	}
	return "", problem.New(v1.ReasonClusterNotSelected,
		"no FloatingIPRange of Harvester cluster %s annotated harvesterNetworkName=%s selects the cluster: %s; the FloatingIP is created as soon as one does",
		redact.Shorten(p.harvester, harvester.MaxQuoted), redact.Shorten(n.String(), harvester.MaxQuoted), allocation.Why(choice.Passed))
}

// rangeInfos lists the ranges that can take new FloatingIPs.
func (h *handler) rangeInfos() ([]harvester.Range, error) {
	all, err := h.ranges.Cache().List(labels.Everything())
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
				Family:           harvester.FamilyOfCIDR(r.Spec.IPRange),
			})
		}
	}
	return out, nil
}

// create makes a FloatingIP and reports whether it did. Its fixed name makes a second create — by
// a second replica, or after a restart before the cache showed the first — fail with AlreadyExists
// instead of allocating a second address.
func (h *handler) create(key string, c *provv1.Cluster, p *resolvedCluster, n newFloatingIP) (bool, error) {
	fip := &v1.FloatingIP{ObjectMeta: metav1.ObjectMeta{
		Name:      n.name,
		Namespace: p.namespace,
		Annotations: map[string]string{
			v1.AnnotationClusterName:         c.Name,
			v1.AnnotationFloatingIPRange:     n.rng,
			v1.AnnotationUpdateConfigMap:     "true",
			v1.AnnotationProvisioningCluster: key,
		},
		// The FloatingIP controller's own finalizer, set at birth: that controller would otherwise
		// add it with an update of its own before claiming the address, one more write per cluster.
		Finalizers: []string{v1.FloatingIPFinalizer},
	}}
	cluster := v1.ClusterReference{Namespace: c.Namespace, Name: c.Name}
	proposal := h.alloc.Propose(n.rng, fip.Namespace, fip.Name, cluster, n.dualStack)
	if proposal.Addr.IsValid() {
		fip.Annotations[v1.AnnotationFloatingIPRange] = proposal.Range
		fip.Spec.IPAddress = proposal.Addr.String()
		fip.Annotations[v1.AnnotationProposedAddress] = proposal.Addr.String()
	}
	rangeName := fip.Annotations[v1.AnnotationFloatingIPRange]
	if _, err := h.fips.Create(fip); err != nil {
		if proposal.Addr.IsValid() {
			h.alloc.Withdraw(rangeName, proposal.Addr, fip.Namespace, fip.Name)
		}
		if apierrors.IsAlreadyExists(err) {
			return false, nil
		}
		return false, fmt.Errorf("creating FloatingIP %s/%s for guest cluster %s: %w", fip.Namespace, fip.Name, key, err)
	}
	msg := fmt.Sprintf("created FloatingIP %s/%s from FloatingIPRange %s (Harvester cluster %s, network %s from HarvesterConfig %s, %s)",
		fip.Namespace, fip.Name, rangeName, redact.Shorten(p.harvester, harvester.MaxQuoted), p.network.Network, p.config, p.network.From)
	if proposal.Retained {
		msg += fmt.Sprintf("; it gets back %s, retained for this cluster since an earlier cluster of this name was deleted", proposal.Addr)
	}
	if why := p.passed[rangeName]; why != "" {
		msg += "; the ranges before it in selection order were passed over: " + why
	}
	if f := h.familyOfRange(rangeName); n.dualStack && f != 0 {
		msg += fmt.Sprintf("; the cluster is dual-stack, and this is its %s address", f)
	}
	h.recorder.Event(c, v1.EventType(v1.ReasonFloatingIPCreated), v1.ReasonFloatingIPCreated, msg)
	return true, nil
}

// report records a problem as a Warning Event on the cluster and a warning log line, once for as
// long as it stays the same. It reports whether it was new.
func (h *handler) report(key string, c *provv1.Cluster, p *problem.Problem) bool {
	if !h.recorded.isNew(key, p.Reason, p.Message) {
		return false
	}
	h.recorder.Event(c, v1.EventType(p.Reason), p.Reason, p.Message)
	return true
}

// forget drops what discovery remembers of the cluster: it is done, or gone.
func (h *handler) forget(key string) {
	h.waiters.forget(key)
	h.recorded.forget(key)
	h.credentials.forget(key)
}
