package guestcluster

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"sync"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// A pass starts when what the guest must get changes, and only then: the FloatingIP's
// status.guestInputs holds a hash of what the last pass worked from (inputsOf), so every trigger
// compares that hash with the objects as they are now. A status heartbeat of a Rancher object, or
// a status write of the operator's own, changes none of the inputs and starts nothing.
//
// A pass's status write reaches the cache a moment after the pass, and handlers run meanwhile (the
// allocation's own status writes, discovery waking the cluster): compared with status.guestInputs
// alone, each of them would queue a second pass with the very inputs the first one worked from.
// So the inputs of the last pass started over each FloatingIP are kept in memory (startedInputs)
// until its status shows them, and a trigger compares with those.

// inputsOf hashes what a pass over f works from, as the caches show it now.
func (c *controller) inputsOf(f *v1.FloatingIP) string {
	cluster := f.Annotations[v1.AnnotationClusterName]
	parts := []string{f.Status.IPAddress, f.Annotations[v1.AnnotationFloatingIPRange], cluster, f.Annotations[v1.AnnotationUpdateConfigMap]}
	if prov, err := c.Provisioning.Cache().Get(c.opts.FleetNamespace, cluster); err == nil {
		parts = append(parts, prov.Status.ClusterName, secretNameOf(prov), labelState(prov.Labels))
	}
	if mgmt, err := c.Management.Cache().Get(f.Namespace); err == nil {
		parts = append(parts, string(rancherState(mgmt)), labelState(mgmt.Labels))
	}
	if nic, wrong := c.nicOf(f); nic.Name != "" || wrong != nil {
		// Only when Harvester tells, for the same reason as below.
		parts = append(parts, "nic", nic.Name)
		if wrong != nil {
			parts = append(parts, wrong.Reason, wrong.Message)
		}
	}
	if ns, ok := f.Annotations[v1.AnnotationGuestNamespace]; ok {
		// Only when set, so that the inputs of a FloatingIP without it stay those of earlier
		// releases, and an upgrade starts no pass.
		parts = append(parts, "guest-namespace", ns)
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:12])
}

// enqueueIfChanged starts a pass for namespace ns when what one of its guest cluster's
// FloatingIPs must get differs from what the last pass worked from.
func (c *controller) enqueueIfChanged(ns string) {
	fips, err := c.FloatingIPs.Cache().List(ns, labels.Everything())
	if err != nil {
		return
	}
	for _, f := range fips {
		if f.DeletionTimestamp == nil && f.Annotations[v1.AnnotationClusterName] != "" && c.enqueueIfNew(f) {
			return
		}
	}
}

// enqueueIfNew starts a pass for f's cluster when what f's guest must get differs from what the
// last pass worked from (the last pass this process started, else the one f's status shows), and
// says whether it did; nothing while the first read of the Harvester cluster of f's range is under
// way. The inputs count as started from here on: a
// second look at the same inputs (the FloatingIP handlers run twice for one change that both the
// informer and another controller announce) while the pass waits in the queue, or has just left
// it, starts no second pass.
func (c *controller) enqueueIfNew(f *v1.FloatingIP) bool {
	if c.harvesterPending(f) {
		// The NIC is not known yet: a pass would only wait for it, and its inputs change again
		// when the read ends, which starts the pass (harvesterChanged).
		return false
	}
	inputs := c.inputsOf(f)
	if inputs == c.started.last(f) {
		return false
	}
	c.started.start(f, inputs)
	c.queue.Add(f.Namespace)
	return true
}

// startedInputs holds, by FloatingIP, the inputs of the last pass this process started over it,
// for as long as its status in the cache does not show them yet: an entry lives for about one
// status write's round trip, or, for a FloatingIP whose first pass records nothing (no address
// yet), until it is deleted. The zero value is ready to use.
type startedInputs struct {
	mu     sync.Mutex
	byName map[string]string // by namespace/name, the handlers' key
}

func keyOf(f *v1.FloatingIP) string { return f.Namespace + "/" + f.Name }

// start records the inputs a pass over f starts from.
func (s *startedInputs) start(f *v1.FloatingIP, inputs string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byName == nil {
		s.byName = map[string]string{}
	}
	s.byName[keyOf(f)] = inputs
}

// last is the inputs of the last pass over f: those it started from, or, once its status shows
// them (the entry is then dropped) or when no pass was started here, its status.guestInputs.
func (s *startedInputs) last(f *v1.FloatingIP) string {
	key := keyOf(f)
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.byName[key]
	if !ok {
		return f.Status.GuestInputs
	}
	if in == f.Status.GuestInputs {
		delete(s.byName, key)
	}
	return in
}

// forget drops the entry of the FloatingIP key (namespace/name), which is gone.
func (s *startedInputs) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byName, key)
}

func labelState(l map[string]string) string {
	keys := slices.Sorted(maps.Keys(l))
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + l[k] + ",")
	}
	return b.String()
}

// onManagementCluster starts a pass for the cluster when Rancher's view of it (provisioning,
// connected, disconnected) or its labels change. The management cluster's name is the guest's
// namespace.
func (c *controller) onManagementCluster(_ string, m *mgmtv3.Cluster) (*mgmtv3.Cluster, error) {
	if m != nil {
		c.enqueueIfChanged(m.Name)
	}
	return m, nil
}

// onProvisioningCluster starts a pass when the cluster's labels, its management cluster or its
// kubeconfig Secret change.
func (c *controller) onProvisioningCluster(_ string, p *provv1.Cluster) (*provv1.Cluster, error) {
	if p != nil && p.Status.ClusterName != "" {
		c.enqueueIfChanged(p.Status.ClusterName)
	}
	return p, nil
}

// secretNameOf is the Secret holding the cluster's kubeconfig: what its status names, else
// Rancher's convention.
func secretNameOf(p *provv1.Cluster) string {
	return cmp.Or(p.Status.ClientSecretName, p.Name+"-kubeconfig")
}
