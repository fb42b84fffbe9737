package guestcluster

import (
	"testing"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/pkg/cachetrim"
)

// The guest passes read the same Rancher state, labels and kubeconfig Secret name from the trimmed
// objects the operator's caches keep as from Rancher's full ones.
func TestTrimmedClustersGiveTheSameInputs(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "c-m-abc", Labels: map[string]string{"kube-fip.k8s.binbash.org/kubevip": "true", "env": "prod"},
		Annotations:   map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "authz.management.cattle.io/creator": "u"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "rancher"}}}
	conditions := map[string][]mgmtv3.ClusterCondition{
		"connected":    {{Type: "Provisioned", Status: corev1.ConditionTrue}, {Type: "Connected", Status: corev1.ConditionTrue, Message: "m"}},
		"disconnected": {{Type: "Ready", Status: corev1.ConditionFalse, Reason: "Disconnected", LastUpdateTime: "t"}},
		"ready only":   {{Type: "Ready", Status: corev1.ConditionTrue}},
		"provisioning": {{Type: "Ready", Status: corev1.ConditionUnknown, Reason: "Waiting"}, {Type: "Updated", Status: corev1.ConditionTrue}},
		"none":         nil,
	}
	for name, conds := range conditions {
		t.Run(name, func(t *testing.T) {
			m := &mgmtv3.Cluster{ObjectMeta: *meta.DeepCopy()}
			m.Spec.DisplayName = "guest"
			m.Status.Conditions = conds
			m.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
			m.Status.AgentImage = "rancher/rancher-agent:v2.9.0"
			full := m.DeepCopy()
			out, err := cachetrim.ManagementCluster(m)
			if err != nil {
				t.Fatal(err)
			}
			trimmed := out.(*mgmtv3.Cluster)
			if a, b := rancherState(full), rancherState(trimmed); a != b {
				t.Errorf("rancherState: full %s, trimmed %s", a, b)
			}
			if a, b := labelState(full.Labels), labelState(trimmed.Labels); a != b {
				t.Errorf("labels: full %s, trimmed %s", a, b)
			}
		})
	}
	for name, secret := range map[string]string{"named": "guest-kubeconfig-x", "unnamed": ""} {
		t.Run("provisioning cluster, secret "+name, func(t *testing.T) {
			p := &provv1.Cluster{ObjectMeta: *meta.DeepCopy()}
			p.Namespace, p.Name = "fleet-default", "guest"
			p.Status = provv1.ClusterStatus{ClusterName: "c-m-abc", ClientSecretName: secret, Ready: true}
			p.Spec.KubernetesVersion = "v1.30.4+rke2r1"
			full := p.DeepCopy()
			out, err := cachetrim.ProvisioningCluster(p)
			if err != nil {
				t.Fatal(err)
			}
			trimmed := out.(*provv1.Cluster)
			if a, b := secretNameOf(full), secretNameOf(trimmed); a != b {
				t.Errorf("secretNameOf: full %s, trimmed %s", a, b)
			}
			if trimmed.Status.ClusterName != full.Status.ClusterName || labelState(full.Labels) != labelState(trimmed.Labels) {
				t.Errorf("clusterName or labels differ: full %+v, trimmed %+v", full.ObjectMeta, trimmed.ObjectMeta)
			}
		})
	}
}
