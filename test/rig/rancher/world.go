package rancher

import (
	"context"
	"fmt"
	"slices"
	"sync"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	rkev1 "github.com/rancher/rancher/pkg/apis/rke.cattle.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io"
	mgmtcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io/v3"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io"
	provcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io/v1"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/test/rig"
)

// Rancher's namespaces, as the operator's defaults expect them.
const (
	FleetNamespace  = "fleet-default"
	GlobalNamespace = "cattle-global-data"
)

// World creates the objects Rancher keeps for guest clusters — and for the Harvester clusters they
// run on — on a control plane, and remembers them so that Cleanup deletes them again. The tests
// and `make run`'s demo both build their guest clusters with it. It is safe for concurrent use.
type World struct {
	// The clients the world is built with, for a test to look at or change what it built.
	Kube kubernetes.Interface
	Prov provcontrollers.ClusterClient
	Mgmt mgmtcontrollers.ClusterClient
	Dyn  dynamic.Interface
	FIPs kubefipcontrollers.Interface

	mu                                                                      sync.Mutex
	namespaces, clusters, managementClusters, credentials, configs, secrets []string
}

// NewWorld connects to the API server of cfg and creates Rancher's namespaces.
func NewWorld(cfg *rest.Config) (*World, error) {
	// client-go's default of 5 requests a second would make a benchmark measure the client.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	w := &World{}
	var err error
	if w.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if w.Dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	prov, err := provisioning.NewFactoryFromConfig(cfg)
	if err != nil {
		return nil, err
	}
	mgmt, err := management.NewFactoryFromConfig(cfg)
	if err != nil {
		return nil, err
	}
	fips, err := kubefip.NewFactoryFromConfig(cfg)
	if err != nil {
		return nil, err
	}
	w.Prov, w.Mgmt, w.FIPs = prov.Provisioning().V1().Cluster(), mgmt.Management().V3().Cluster(), fips.Kubefip().V1()
	for _, ns := range []string{FleetNamespace, GlobalNamespace} {
		if err := w.createNamespace(ns); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func (w *World) createNamespace(name string) error {
	_, err := w.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// AddNamespace creates a guest cluster's namespace (Rancher creates c-m-xxxxxxxx for each
// cluster); one that exists is kept.
func (w *World) AddNamespace(name string) error {
	if err := w.createNamespace(name); err != nil {
		return err
	}
	w.remember(&w.namespaces, name)
	return nil
}

// AddCredential creates a cloud credential in cattle-global-data with data.
func (w *World) AddCredential(name string, data map[string]string) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: GlobalNamespace}, StringData: data,
		Type: "provisioning.cattle.io/cloud-credential"}
	if _, err := w.Kube.CoreV1().Secrets(GlobalNamespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating credential %s: %w", name, err)
	}
	w.remember(&w.credentials, name)
	return nil
}

// HarvesterCredential is a Harvester cloud credential naming the Harvester management cluster id.
func HarvesterCredential(id string) map[string]string {
	return map[string]string{
		harvester.ClusterIDKey:                        id,
		"harvestercredentialConfig-clusterType":       "imported",
		"harvestercredentialConfig-kubeconfigContent": "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: do-not-log-me\n",
	}
}

// AddManagementCluster creates a management cluster; an existing one is left as it is, so that
// several guests may share a Harvester cluster.
func (w *World) AddManagementCluster(id, displayName string) error {
	return w.CreateManagementCluster(&mgmtv3.Cluster{ObjectMeta: metav1.ObjectMeta{Name: id}, Spec: mgmtv3.ClusterSpec{DisplayName: displayName}})
}

// CreateManagementCluster creates the management cluster c with the status it carries; an
// existing one is left as it is.
func (w *World) CreateManagementCluster(c *mgmtv3.Cluster) error {
	created, err := w.Mgmt.Create(c)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating management cluster %s: %w", c.Name, err)
	}
	w.remember(&w.managementClusters, c.Name)
	if len(c.Status.Conditions) == 0 {
		return nil
	}
	created.Status = c.Status
	if _, err := w.Mgmt.UpdateStatus(created); err != nil {
		return fmt.Errorf("setting the status of management cluster %s: %w", c.Name, err)
	}
	return nil
}

// AddKubeconfigSecret creates the Secret name in fleet-default holding kubeconfig, as Rancher
// writes one for each guest cluster.
func (w *World) AddKubeconfigSecret(name string, kubeconfig []byte) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: FleetNamespace}, Data: map[string][]byte{"value": kubeconfig}}
	if _, err := w.Kube.CoreV1().Secrets(FleetNamespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the kubeconfig Secret %s: %w", name, err)
	}
	w.remember(&w.secrets, name)
	return nil
}

// SetKubeconfig replaces what the kubeconfig Secret name in fleet-default holds, as Rancher does
// when it rotates a guest's token.
func (w *World) SetKubeconfig(name string, kubeconfig []byte) error {
	secrets := w.Kube.CoreV1().Secrets(FleetNamespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := secrets.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Data = map[string][]byte{"value": kubeconfig}
		_, err = secrets.Update(context.Background(), s, metav1.UpdateOptions{})
		return err
	})
}

// HarvesterConfigResource is the Harvester node driver's machine configuration.
func HarvesterConfigResource() schema.GroupVersionResource {
	return HarvesterConfigGVK.GroupVersion().WithResource("harvesterconfigs")
}

// AddMachineConfig creates a HarvesterConfig in fleet-default with fields at its root, as the
// node driver writes them.
func (w *World) AddMachineConfig(name string, fields map[string]interface{}) error {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"cpuCount": "2", "memorySize": "4"}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetGroupVersionKind(HarvesterConfigGVK)
	u.SetNamespace(FleetNamespace)
	u.SetName(name)
	if _, err := w.Dyn.Resource(HarvesterConfigResource()).Namespace(FleetNamespace).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating HarvesterConfig %s: %w", name, err)
	}
	w.remember(&w.configs, name)
	return nil
}

// Network is the network fields of a HarvesterConfig whose machines use the Harvester network name.
func Network(name string) map[string]interface{} {
	return map[string]interface{}{"networkName": "default/" + name}
}

// AddProvisioningCluster creates the provisioning cluster c and sets status.clusterName the way
// Rancher does once the management cluster clusterName exists, with status.clientSecretName when
// secret is not empty.
func (w *World) AddProvisioningCluster(c *provv1.Cluster, clusterName, secret string) error {
	created, err := w.Prov.Create(c)
	if err != nil {
		return fmt.Errorf("creating provisioning cluster %s: %w", c.Name, err)
	}
	w.remember(&w.clusters, c.Name)
	created.Status.ClusterName, created.Status.ClientSecretName = clusterName, secret
	if _, err := w.Prov.UpdateStatus(created); err != nil {
		return fmt.Errorf("setting the status of provisioning cluster %s: %w", c.Name, err)
	}
	return nil
}

// HarvesterPool is a control-plane machine pool on the HarvesterConfig config.
func HarvesterPool(config string) provv1.RKEMachinePool {
	return provv1.RKEMachinePool{
		Name: "pool1", ControlPlaneRole: true, EtcdRole: true, WorkerRole: true,
		NodeConfig: &corev1.ObjectReference{Kind: harvester.MachineConfigKind, Name: config, APIVersion: "rke-machine-config.cattle.io/v1"},
	}
}

// LabelCluster sets a label on the provisioning cluster name, as a person editing it in Rancher
// would.
func (w *World) LabelCluster(name, key, value string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := w.Prov.Get(FleetNamespace, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[key] = value
		_, err = w.Prov.Update(c)
		return err
	})
}

// LabelGuest sets a label of a guest cluster as Rancher keeps it when a person edits the cluster's
// labels: on the provisioning cluster name and, as Rancher copies them, on its management cluster
// id.
func (w *World) LabelGuest(name, id, key, value string) error {
	if err := w.LabelCluster(name, key, value); err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m, err := w.Mgmt.Get(id, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels[key] = value
		_, err = w.Mgmt.Update(m)
		return err
	})
}

// DeleteCluster deletes a provisioning cluster.
func (w *World) DeleteCluster(name string) error {
	if err := w.Prov.Delete(FleetNamespace, name, nil); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting provisioning cluster %s: %w", name, err)
	}
	return nil
}

// RemoveGuest deletes what the guest's steps created but its provisioning cluster, which the
// caller deletes first (the operator must see it go and release its address): the management
// cluster, the namespace, the cloud credential, the machine config and the kubeconfig Secret. The
// namespace is finalized at once: no namespace controller runs here to empty it, and the
// operator's FloatingIPs in it are gone with the cluster. What is already gone is no error.
func (w *World) RemoveGuest(g Guest) error {
	ctx := context.Background()
	ignore := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	steps := []func() error{
		func() error { return ignore(w.Mgmt.Delete(g.ID, nil)) },
		func() error {
			if err := ignore(w.Kube.CoreV1().Namespaces().Delete(ctx, g.ID, metav1.DeleteOptions{})); err != nil {
				return err
			}
			ns, err := w.Kube.CoreV1().Namespaces().Get(ctx, g.ID, metav1.GetOptions{})
			if err != nil {
				return ignore(err)
			}
			ns.Spec.Finalizers = nil
			_, err = w.Kube.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
			return ignore(err)
		},
		func() error {
			return ignore(w.Kube.CoreV1().Secrets(FleetNamespace).Delete(ctx, g.SecretName(), metav1.DeleteOptions{}))
		},
	}
	if g.Harvester != "" {
		steps = append(steps,
			func() error {
				return ignore(w.Kube.CoreV1().Secrets(GlobalNamespace).Delete(ctx, g.CredentialName(), metav1.DeleteOptions{}))
			},
			func() error {
				return ignore(w.Dyn.Resource(HarvesterConfigResource()).Namespace(FleetNamespace).Delete(ctx, g.ConfigName(), metav1.DeleteOptions{}))
			})
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("removing guest %s: %w", g.Name, err)
		}
	}
	return nil
}

func (w *World) remember(list *[]string, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	*list = append(*list, name)
}

// Cleanup deletes the clusters first, so that no operator still running creates FloatingIPs
// again, then the FloatingIPs of the guest namespaces, whose finalizers an operator must process,
// then everything else. It is best effort: whatever is left goes with the control plane.
func (w *World) Cleanup() {
	w.mu.Lock()
	defer w.mu.Unlock()
	ctx := context.Background()
	_ = rig.Parallel(w.clusters, func(name string) error {
		if c, err := w.Prov.Get(FleetNamespace, name, metav1.GetOptions{}); err == nil && len(c.Finalizers) > 0 {
			c.Finalizers = nil
			_, _ = w.Prov.Update(c)
		}
		return w.Prov.Delete(FleetNamespace, name, nil)
	})
	_ = rig.Parallel(w.namespaces, func(ns string) error {
		if list, err := w.FIPs.FloatingIP().List(ns, metav1.ListOptions{}); err == nil {
			for _, f := range list.Items {
				_ = w.FIPs.FloatingIP().Delete(ns, f.Name, nil)
			}
		}
		return w.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
	_ = rig.Parallel(w.managementClusters, func(id string) error { return w.Mgmt.Delete(id, nil) })
	_ = rig.Parallel(w.credentials, func(name string) error {
		return w.Kube.CoreV1().Secrets(GlobalNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	})
	_ = rig.Parallel(w.secrets, func(name string) error {
		return w.Kube.CoreV1().Secrets(FleetNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	})
	_ = rig.Parallel(w.configs, func(name string) error {
		return w.Dyn.Resource(HarvesterConfigResource()).Namespace(FleetNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// Guest is one guest cluster in all its parts. A Harvester guest (Harvester set) has a cloud
// credential naming the Harvester cluster, a machine pool on a HarvesterConfig with the Network
// fields, and Config as its machineGlobalConfig; a connected guest (Kubeconfig set) has the
// kubeconfig Secret Rancher writes and a Connected management cluster.
type Guest struct {
	Name      string                 // provisioning cluster
	ID        string                 // management cluster id and namespace, c-m-...
	Harvester string                 // the Harvester cluster's management cluster id
	Display   string                 // the Harvester cluster's display name
	Network   map[string]interface{} // the HarvesterConfig's network fields
	Config    map[string]interface{} // the provisioning cluster's machineGlobalConfig, if any
	// Labels are the provisioning and management clusters' labels.
	Labels map[string]string
	// Kubeconfig is what Rancher's kubeconfig Secret for the guest holds.
	Kubeconfig []byte
}

// CredentialName is the name of the guest's cloud credential.
func (g Guest) CredentialName() string { return "cc-" + g.Name }

// ConfigName is the name of the guest's HarvesterConfig.
func (g Guest) ConfigName() string { return "nc-" + g.Name }

// SecretName is the name of the guest's kubeconfig Secret.
func (g Guest) SecretName() string { return g.Name + "-kubeconfig" }

// Steps returns the steps that create the guest, by name, so that a caller can take them in any
// order: namespace, cluster, credential, management (the Harvester cluster) and config. A guest
// that is not on Harvester has only the cluster step.
func (w *World) Steps(g Guest) map[string]func() error {
	steps := map[string]func() error{
		"namespace": func() error { return w.AddNamespace(g.ID) },
		"cluster":   func() error { return w.AddCluster(g) },
	}
	if g.Harvester != "" {
		steps["credential"] = func() error { return w.AddCredential(g.CredentialName(), HarvesterCredential(g.Harvester)) }
		steps["management"] = func() error { return w.AddManagementCluster(g.Harvester, g.Display) }
		steps["config"] = func() error { return w.AddMachineConfig(g.ConfigName(), g.Network) }
	}
	return steps
}

// AddCluster creates the guest's management cluster, its kubeconfig Secret if it is connected,
// and its provisioning cluster, in that order, as Rancher does: the guest's cluster step.
func (w *World) AddCluster(g Guest) error {
	m := &mgmtv3.Cluster{ObjectMeta: metav1.ObjectMeta{Name: g.ID, Labels: g.Labels}, Spec: mgmtv3.ClusterSpec{DisplayName: g.Name}}
	secret := ""
	if g.Kubeconfig != nil {
		m.Status.Conditions = []mgmtv3.ClusterCondition{{Type: "Connected", Status: corev1.ConditionTrue}}
		secret = g.SecretName()
	}
	if err := w.CreateManagementCluster(m); err != nil {
		return err
	}
	if secret != "" {
		if err := w.AddKubeconfigSecret(secret, g.Kubeconfig); err != nil {
			return err
		}
	}
	c := &provv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: g.Name, Namespace: FleetNamespace, Labels: g.Labels}}
	if g.Harvester != "" {
		c.Spec.CloudCredentialSecretName = GlobalNamespace + ":" + g.CredentialName()
		c.Spec.RKEConfig = &provv1.RKEConfig{MachinePools: []provv1.RKEMachinePool{HarvesterPool(g.ConfigName())}}
		if g.Config != nil {
			c.Spec.RKEConfig.MachineGlobalConfig = rkev1.GenericMap{Data: g.Config}
		}
	}
	return w.AddProvisioningCluster(c, g.ID, secret)
}

// AddGuest creates every part of the guest but those named in skip, the Harvester cluster first
// and the provisioning cluster last, as Rancher does.
func (w *World) AddGuest(g Guest, skip ...string) error {
	steps := w.Steps(g)
	for _, step := range [...]string{"management", "credential", "config", "namespace", "cluster"} {
		do, ok := steps[step]
		if !ok || slices.Contains(skip, step) {
			continue
		}
		if err := do(); err != nil {
			return err
		}
	}
	return nil
}
