package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	rkev1 "github.com/rancher/rancher/pkg/apis/rke.cattle.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/controllers/discovery"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io"
	mgmtcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io/v3"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io"
	provcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/pkg/testenv"
)

// Rancher's namespaces, as the operator's defaults expect them.
const (
	fleetNS  = "fleet-default"
	globalNS = "cattle-global-data"
)

// rancher creates a test's Rancher objects — guest clusters as Rancher records them and the
// Harvester clusters they run on — and deletes them when the test ends, before the fixture's own
// cleanup releases the ranges.
type rancher struct {
	t    testing.TB
	kube kubernetes.Interface
	prov provcontrollers.ClusterClient
	mgmt mgmtcontrollers.ClusterClient
	dyn  dynamic.Interface
	fips kubefipAPI

	// mu guards the lists of what was created: the benchmark creates from many goroutines.
	mu                                                             sync.Mutex
	namespaces, clusters, managementClusters, credentials, configs []string
}

func newRancher(t testing.TB) *rancher {
	t.Helper()
	// client-go's default of 5 requests a second would make the benchmark measure the test client.
	cfg := rest.CopyConfig(shared.env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	r := &rancher{
		t:    t,
		kube: kubernetes.NewForConfigOrDie(cfg),
		prov: provisioning.NewFactoryFromConfigOrDie(cfg).Provisioning().V1().Cluster(),
		mgmt: management.NewFactoryFromConfigOrDie(cfg).Management().V3().Cluster(),
		dyn:  dynamic.NewForConfigOrDie(cfg),
	}
	r.fips = kubefip.NewFactoryFromConfigOrDie(cfg).Kubefip().V1()
	for _, ns := range []string{fleetNS, globalNS} {
		r.ensureNamespace(ns)
	}
	t.Cleanup(r.cleanup)
	return r
}

func (r *rancher) ensureNamespace(name string) {
	r.t.Helper()
	_, err := r.kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		r.t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// namespace creates a guest cluster's namespace (Rancher creates c-m-xxxxxxxx for each cluster).
func (r *rancher) namespace(name string) { r.t.Helper(); r.must(r.addNamespace(name)) }

func (r *rancher) addNamespace(name string) error {
	_, err := r.kube.CoreV1().Namespaces().Create(bg(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	r.remember(&r.namespaces, name)
	return nil
}

// credential creates a cloud credential in cattle-global-data with data.
func (r *rancher) credential(name string, data map[string]string) {
	r.t.Helper()
	r.must(r.addCredential(name, data))
}

func (r *rancher) addCredential(name string, data map[string]string) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: globalNS}, StringData: data,
		Type: "provisioning.cattle.io/cloud-credential"}
	if _, err := r.kube.CoreV1().Secrets(globalNS).Create(bg(), s, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating credential %s: %w", name, err)
	}
	r.remember(&r.credentials, name)
	return nil
}

// harvesterCredential is a Harvester cloud credential naming the Harvester management cluster id.
func harvesterCredential(id string) map[string]string {
	return map[string]string{
		harvester.ClusterIDKey:                        id,
		"harvestercredentialConfig-clusterType":       "imported",
		"harvestercredentialConfig-kubeconfigContent": "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: do-not-log-me\n",
	}
}

// managementCluster creates a management cluster; an existing one is left as it is, so that
// several guests may share a Harvester cluster.
func (r *rancher) managementCluster(id, displayName string) {
	r.t.Helper()
	r.must(r.addManagementCluster(id, displayName))
}

func (r *rancher) addManagementCluster(id, displayName string) error {
	c := &mgmtv3.Cluster{ObjectMeta: metav1.ObjectMeta{Name: id}, Spec: mgmtv3.ClusterSpec{DisplayName: displayName}}
	if _, err := r.mgmt.Create(c); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("creating management cluster %s: %w", id, err)
	}
	r.remember(&r.managementClusters, id)
	return nil
}

// machineConfig creates a HarvesterConfig in fleet-default with fields at its root, as the node
// driver writes them.
func (r *rancher) machineConfig(name string, fields map[string]interface{}) {
	r.t.Helper()
	r.must(r.addMachineConfig(name, fields))
}

func (r *rancher) addMachineConfig(name string, fields map[string]interface{}) error {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"cpuCount": "2", "memorySize": "4"}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetGroupVersionKind(testenv.HarvesterConfigGVK)
	u.SetNamespace(fleetNS)
	u.SetName(name)
	if _, err := r.dyn.Resource(discovery.HarvesterConfigResource()).Namespace(fleetNS).Create(bg(), u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating HarvesterConfig %s: %w", name, err)
	}
	r.remember(&r.configs, name)
	return nil
}

// cluster creates a provisioning cluster with the given pools and sets status.clusterName the
// way Rancher does once the management cluster exists.
func (r *rancher) cluster(name, clusterName, credential string, pools ...provv1.RKEMachinePool) *provv1.Cluster {
	r.t.Helper()
	c := &provv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fleetNS}}
	c.Spec.CloudCredentialSecretName = credential
	if pools != nil {
		c.Spec.RKEConfig = &provv1.RKEConfig{MachinePools: pools}
	}
	return r.createCluster(c, clusterName)
}

func (r *rancher) createCluster(c *provv1.Cluster, clusterName string) *provv1.Cluster {
	r.t.Helper()
	created, err := r.addCluster(c, clusterName)
	r.must(err)
	return created
}

func (r *rancher) addCluster(c *provv1.Cluster, clusterName string) (*provv1.Cluster, error) {
	created, err := r.prov.Create(c)
	if err != nil {
		return nil, fmt.Errorf("creating provisioning cluster %s: %w", c.Name, err)
	}
	r.remember(&r.clusters, c.Name)
	created.Status.ClusterName = clusterName
	updated, err := r.prov.UpdateStatus(created)
	if err != nil {
		return nil, fmt.Errorf("setting the status of provisioning cluster %s: %w", c.Name, err)
	}
	return updated, nil
}

func (r *rancher) remember(list *[]string, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*list = append(*list, name)
}

func (r *rancher) must(err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatal(err)
	}
}

// harvesterPool is a control-plane machine pool on the HarvesterConfig config.
func harvesterPool(config string) provv1.RKEMachinePool {
	return provv1.RKEMachinePool{
		Name: "pool1", ControlPlaneRole: true, EtcdRole: true, WorkerRole: true,
		NodeConfig: &corev1.ObjectReference{Kind: harvester.MachineConfigKind, Name: config, APIVersion: "rke-machine-config.cattle.io/v1"},
	}
}

// guest is one Harvester guest cluster in all its parts.
type guest struct {
	name      string                 // provisioning cluster
	id        string                 // management cluster id and namespace, c-m-...
	harvester string                 // the Harvester cluster's management cluster id
	display   string                 // the Harvester cluster's display name
	network   map[string]interface{} // the HarvesterConfig's network fields
	config    map[string]interface{} // the provisioning cluster's machineGlobalConfig, if any
}

func (g guest) credentialName() string { return "cc-" + g.name }
func (g guest) configName() string     { return "nc-" + g.name }

// parts returns the steps that create the guest, by name, so that a test can take them in any
// order: namespace, cluster, credential, management (the Harvester cluster) and config.
func (r *rancher) parts(g guest) map[string]func() {
	steps := r.steps(g)
	parts := map[string]func(){}
	for name, step := range steps {
		step := step
		parts[name] = func() { r.t.Helper(); r.must(step()) }
	}
	return parts
}

func (r *rancher) steps(g guest) map[string]func() error {
	return map[string]func() error{
		"namespace":  func() error { return r.addNamespace(g.id) },
		"credential": func() error { return r.addCredential(g.credentialName(), harvesterCredential(g.harvester)) },
		"management": func() error { return r.addManagementCluster(g.harvester, g.display) },
		"config":     func() error { return r.addMachineConfig(g.configName(), g.network) },
		"cluster": func() error {
			if err := r.addManagementCluster(g.id, g.name); err != nil {
				return err
			}
			c := &provv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: g.name, Namespace: fleetNS}}
			c.Spec.CloudCredentialSecretName = globalNS + ":" + g.credentialName()
			c.Spec.RKEConfig = &provv1.RKEConfig{MachinePools: []provv1.RKEMachinePool{harvesterPool(g.configName())}}
			if g.config != nil {
				c.Spec.RKEConfig.MachineGlobalConfig = rkev1.GenericMap{Data: g.config}
			}
			_, err := r.addCluster(c, g.id)
			return err
		},
	}
}

// create creates every part of the guest.
func (r *rancher) create(g guest) {
	r.t.Helper()
	r.must(r.addGuest(g))
}

// addGuest creates every part of the guest, the Harvester cluster first and the provisioning
// cluster last, as Rancher does.
func (r *rancher) addGuest(g guest) error {
	steps := r.steps(g)
	for _, step := range []string{"management", "credential", "config", "namespace", "cluster"} {
		if err := steps[step](); err != nil {
			return err
		}
	}
	return nil
}

// waitFIP waits until the FloatingIP namespace/name holds an address.
func (r *rancher) waitFIP(namespace, name string, timeout time.Duration) *v1.FloatingIP {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		x, err := r.fips.FloatingIP().Get(namespace, name, metav1.GetOptions{})
		if err == nil && allocated(x) {
			return x
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("FloatingIP %s/%s: no address within %s (last: %s, err %v)", namespace, name, timeout, statusText(x), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fipsIn lists the FloatingIPs of a namespace.
func (r *rancher) fipsIn(namespace string) []v1.FloatingIP {
	r.t.Helper()
	list, err := r.fips.FloatingIP().List(namespace, metav1.ListOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	return list.Items
}

// deleteCluster deletes a provisioning cluster.
func (r *rancher) deleteCluster(name string) {
	r.t.Helper()
	if err := r.prov.Delete(fleetNS, name, nil); err != nil && !apierrors.IsNotFound(err) {
		r.t.Fatalf("deleting provisioning cluster %s: %v", name, err)
	}
}

// cleanup deletes the clusters first, so that no operator still running (or started by the
// fixture's cleanup) creates FloatingIPs again, then the FloatingIPs of the guest namespaces,
// whose finalizers the fixture's cleanup operator processes, then everything else.
func (r *rancher) cleanup() {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx := context.Background()
	// Best effort: whatever is left goes with the control plane.
	_ = parallel(r.clusters, func(name string) error {
		if c, err := r.prov.Get(fleetNS, name, metav1.GetOptions{}); err == nil && len(c.Finalizers) > 0 {
			c.Finalizers = nil
			_, _ = r.prov.Update(c)
		}
		return r.prov.Delete(fleetNS, name, nil)
	})
	_ = parallel(r.namespaces, func(ns string) error {
		if list, err := r.fips.FloatingIP().List(ns, metav1.ListOptions{}); err == nil {
			for _, f := range list.Items {
				_ = r.fips.FloatingIP().Delete(ns, f.Name, nil)
			}
		}
		return r.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
	_ = parallel(r.managementClusters, func(id string) error { return r.mgmt.Delete(id, nil) })
	_ = parallel(r.credentials, func(name string) error {
		return r.kube.CoreV1().Secrets(globalNS).Delete(ctx, name, metav1.DeleteOptions{})
	})
	_ = parallel(r.configs, func(name string) error {
		return r.dyn.Resource(discovery.HarvesterConfigResource()).Namespace(fleetNS).Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// parallel runs fn for every item on a few goroutines and returns the first error.
func parallel(items []string, fn func(string) error) error {
	work := make(chan string)
	errs := make(chan error, len(items))
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for item := range work {
				if err := fn(item); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, item := range items {
		work <- item
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

// createRangeFor creates a range of the fixture for a Harvester cluster and network.
func (f *fixture) createRangeFor(name, cidr, harvesterName, network string) {
	f.t.Helper()
	_, err := f.api.FloatingIPRange().Create(&v1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			v1.AnnotationHarvesterClusterName: harvesterName,
			v1.AnnotationHarvesterNetworkName: network,
		}},
		Spec: v1.FloatingIPRangeSpec{IPRange: cidr},
	})
	if err != nil {
		f.t.Fatalf("creating range %s: %v", name, err)
	}
	f.ranges = append(f.ranges, name)
}

// errorLinesAbout returns the operator's error-level log lines that mention any of words.
func errorLinesAbout(logs string, words ...string) []string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, "level=error") {
			continue
		}
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	return out
}

func bg() context.Context { return context.Background() }
