package guestcluster

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
)

// seenClusters remembers what each trigger last saw, so that only a real change — not a status
// heartbeat of a Rancher object — starts a guest pass.
type seenClusters struct {
	mu     sync.Mutex
	fips   map[string]string
	states map[string]string
	// clusters maps a cluster's namespace to the cluster name its metrics are labelled with.
	clusters map[string]string
}

func newSeenClusters() *seenClusters {
	return &seenClusters{fips: map[string]string{}, states: map[string]string{}, clusters: map[string]string{}}
}

func (s *seenClusters) rememberCluster(ns, cluster string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clusters[ns] = cluster
}

func (s *seenClusters) forgetCluster(ns string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cluster, ok := s.clusters[ns]
	delete(s.clusters, ns)
	return cluster, ok
}

func (s *seenClusters) floatingIPChanged(key string, f *v1.FloatingIP) bool {
	state := fmt.Sprintf("%s|%s|%s|%s", f.Status.IPAddress, f.Status.Range,
		f.Annotations[v1.AnnotationClusterName], f.Annotations[v1.AnnotationUpdateConfigMap])
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.fips[key]
	s.fips[key] = state
	return !ok || old != state
}

// forget drops a deleted FloatingIP and reports whether it was known.
func (s *seenClusters) forget(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.fips[key]
	delete(s.fips, key)
	return ok
}

// changed records state for key and reports whether it differs from the last one.
func (s *seenClusters) changed(key, state string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.states[key]
	s.states[key] = state
	return !ok || old != state
}

func labelState(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s,", k, l[k])
	}
	return b.String()
}

// onManagementCluster starts a pass for the cluster when Rancher's view of it (provisioning,
// connected, disconnected) or its labels change. The management cluster's name is the guest's
// namespace.
func (c *controller) onManagementCluster(key string, m *mgmtv3.Cluster) (*mgmtv3.Cluster, error) {
	if m == nil {
		return m, nil
	}
	if c.seen.changed("mgmt/"+key, fmt.Sprintf("%s|%s", rancherState(m), labelState(m.Labels))) {
		c.enqueueNamespace(m.Name)
	}
	return m, nil
}

// onProvisioningCluster starts a pass when the cluster's labels, its management cluster or its
// kubeconfig Secret change.
func (c *controller) onProvisioningCluster(key string, p *provv1.Cluster) (*provv1.Cluster, error) {
	if p == nil || p.Status.ClusterName == "" {
		return p, nil
	}
	if c.seen.changed("prov/"+key, fmt.Sprintf("%s|%s|%s", p.Status.ClusterName, p.Status.ClientSecretName, labelState(p.Labels))) {
		c.enqueueNamespace(p.Status.ClusterName)
	}
	return p, nil
}

// onSecret starts a pass with the new kubeconfig as soon as Rancher rotates it. It sees the
// Secret's metadata only.
func (c *controller) onSecret(obj interface{}) {
	s, err := meta.Accessor(obj)
	if err != nil || s.GetNamespace() != c.opts.FleetNamespace || !strings.HasSuffix(s.GetName(), "-kubeconfig") {
		return
	}
	if !c.seen.changed("secret/"+s.GetNamespace()+"/"+s.GetName(), s.GetResourceVersion()) {
		return
	}
	clusters, err := c.Provisioning.Cache().List(c.opts.FleetNamespace, labels.Everything())
	if err != nil {
		return
	}
	for _, p := range clusters {
		if secretNameOf(p) == s.GetName() && p.Status.ClusterName != "" {
			c.enqueueNamespace(p.Status.ClusterName)
		}
	}
}

// secretNameOf is the Secret holding the cluster's kubeconfig: what its status names, else
// Rancher's convention.
func secretNameOf(p *provv1.Cluster) string {
	if p.Status.ClientSecretName != "" {
		return p.Status.ClientSecretName
	}
	return p.Name + "-kubeconfig"
}
