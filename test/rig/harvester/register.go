package harvester

import (
	"fmt"
	"time"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/kubefip/kube-fip-operator/test/rig/guests"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
)

// What marks a cluster imported into Rancher as a Harvester cluster.
const (
	// LabelProvider is the label Rancher's dashboard puts on the provisioning cluster of an
	// imported Harvester, which Rancher copies onto the management cluster.
	LabelProvider = "provider.cattle.io"
	// Provider is its value, and the management cluster's status.provider.
	Provider = "harvester"
	// annotationDisplayName is the annotation Rancher gives a provisioning cluster, naming its
	// management cluster's display name.
	annotationDisplayName = "provisioning.cattle.io/management-cluster-display-name"
)

// Register makes the Harvester API server an administrator reaches with cfg (named name) reachable as Rancher makes an imported Harvester
// cluster: through the test cluster proxy as cluster id with token, and known to Rancher's objects
// in the management API server of w.
//
// Rancher's dashboard imports a Harvester cluster by creating a provisioning cluster in
// fleet-default, named by the name a person gives it and labelled provider.cattle.io=harvester
// (rancher/dashboard pkg/harvester-manager/edit/harvesterhci.io.management.cluster.vue,
// saveOverride). Rancher (v2.15.0 pkg/controllers/provisioningv2/cluster/controller.go,
// createNewCluster and updateStatus) then creates the management cluster: named c-m-<8
// characters> (mgmtClusterName), with that name as spec.displayName, the provisioning cluster's
// labels and spec.fleetWorkspaceName fleet-default; it sets status.clusterName of the provisioning
// cluster to it and, once the agent has Connected, writes the kubeconfig Secret
// <name>-kubeconfig in fleet-default (pkg/provisioningv2/kubeconfig/manager.go) and names it in
// status.clientSecretName; OnChange annotates the provisioning cluster with its display name.
// Rancher reports the management cluster's provider as harvester
// (pkg/controllers/provisioningv2/cluster/status.go). Clusters named c-xxxxx (Rancher's older ids)
// take the other way round, a provisioning cluster named like the management cluster
// (generateProvisioningClusterFromLegacyCluster): id should be c-m-..., as Rancher now makes them.
//
// The management cluster is created with the Connected, Provisioned and Ready conditions True;
// one that exists (World.AddManagementCluster leaves an existing one alone) is given the label,
// the display name, the provider and those conditions. w's Cleanup deletes what w created; the
// proxy keeps the registration, as it has no way to drop one.
func Register(w *rancher.World, proxy *guests.ClusterProxy, name string, cfg *rest.Config, id, display, token string) error {
	if err := proxy.RegisterConfig(id, name, cfg, token); err != nil {
		return fmt.Errorf("registering Harvester cluster %s with the cluster proxy: %w", id, err)
	}
	kubeconfig, err := proxy.Kubeconfig(id, token)
	if err != nil {
		return err
	}
	if err := ensureManagementCluster(w, id, display); err != nil {
		return err
	}
	secret := display + "-kubeconfig"
	if err := w.AddKubeconfigSecret(secret, kubeconfig); err != nil {
		return err
	}
	c := &provv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: display, Namespace: rancher.FleetNamespace,
		Labels: map[string]string{LabelProvider: Provider}, Annotations: map[string]string{annotationDisplayName: display}}}
	if err := w.AddProvisioningCluster(c, id, secret); err != nil {
		return err
	}
	// Rancher also marks the provisioning cluster Ready and names its fleet workspace.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := w.Prov.Get(rancher.FleetNamespace, display, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got.Status.Ready, got.Status.FleetWorkspaceName = true, rancher.FleetNamespace
		_, err = w.Prov.UpdateStatus(got)
		return err
	})
	if err != nil {
		return fmt.Errorf("marking provisioning cluster %s ready: %w", display, err)
	}
	return nil
}

// ensureManagementCluster creates the management cluster id of the Harvester cluster display, or
// gives an existing one what Register promises.
func ensureManagementCluster(w *rancher.World, id, display string) error {
	now := time.Now().UTC().Format(time.RFC3339)
	conditions := []mgmtv3.ClusterCondition{
		{Type: "Connected", Status: corev1.ConditionTrue, LastUpdateTime: now},
		{Type: "Provisioned", Status: corev1.ConditionTrue, LastUpdateTime: now},
		{Type: "Ready", Status: corev1.ConditionTrue, LastUpdateTime: now},
	}
	m := &mgmtv3.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: id, Labels: map[string]string{LabelProvider: Provider}},
		Spec:       mgmtv3.ClusterSpec{DisplayName: display, FleetWorkspaceName: rancher.FleetNamespace},
		Status:     mgmtv3.ClusterStatus{Provider: Provider, Conditions: conditions},
	}
	if err := w.CreateManagementCluster(m); err != nil {
		return err
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := w.Mgmt.Get(id, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Labels[LabelProvider] == Provider && got.Spec.DisplayName == display {
			return nil
		}
		if got.Labels == nil {
			got.Labels = map[string]string{}
		}
		got.Labels[LabelProvider], got.Spec.DisplayName = Provider, display
		if got.Spec.FleetWorkspaceName == "" {
			got.Spec.FleetWorkspaceName = rancher.FleetNamespace
		}
		_, err = w.Mgmt.Update(got)
		return err
	})
	if err != nil {
		return fmt.Errorf("labelling management cluster %s as Harvester: %w", id, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := w.Mgmt.Get(id, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.Provider == Provider && allTrue(got.Status.Conditions, conditions) {
			return nil
		}
		got.Status.Provider = Provider
		got.Status.Conditions = setConditions(got.Status.Conditions, conditions)
		_, err = w.Mgmt.UpdateStatus(got)
		return err
	})
	if err != nil {
		return fmt.Errorf("setting the status of management cluster %s: %w", id, err)
	}
	return nil
}

// setConditions is have with each of want in place of the condition of its type.
func setConditions(have, want []mgmtv3.ClusterCondition) []mgmtv3.ClusterCondition {
	out := append([]mgmtv3.ClusterCondition(nil), have...)
	for _, w := range want {
		replaced := false
		for i := range out {
			if out[i].Type == w.Type {
				out[i], replaced = w, true
			}
		}
		if !replaced {
			out = append(out, w)
		}
	}
	return out
}

// allTrue reports whether have holds each condition type of want, True.
func allTrue(have, want []mgmtv3.ClusterCondition) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || (h.Type == w.Type && h.Status == corev1.ConditionTrue)
		}
		if !found {
			return false
		}
	}
	return true
}
