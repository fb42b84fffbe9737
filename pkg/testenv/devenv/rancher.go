package main

import (
	"context"
	"fmt"
	"time"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	provv1 "github.com/rancher/rancher/pkg/apis/provisioning.cattle.io/v1"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	kubefipv1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/controllers/discovery"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io"
	"github.com/kubefip/kube-fip-operator/pkg/harvester"
	"github.com/kubefip/kube-fip-operator/pkg/testenv"
)

// The demo: a Harvester cluster "harvester-demo" as Rancher knows it, a range for its network
// vlan10, and a guest cluster "demo" provisioned on it whose namespace Rancher has not created yet.
const (
	demoCluster     = "demo"
	demoNamespace   = "c-m-demo0001"
	demoHarvesterID = "c-m-harvdemo"
	demoDelay       = 5 * time.Second
)

// seedRancher creates what Rancher would hold for a guest cluster on Harvester, all but the guest
// cluster's namespace, which newGuestNamespace creates later.
func seedRancher(ctx context.Context, env *testenv.Environment) error {
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	for _, ns := range []string{"fleet-default", "cattle-global-data"} {
		if err := ignoreExists(kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	mgmt := management.NewFactoryFromConfigOrDie(env.Config).Management().V3().Cluster()
	for id, display := range map[string]string{demoHarvesterID: "harvester-demo", demoNamespace: demoCluster} {
		if err := ignoreExists(mgmt.Create(&mgmtv3.Cluster{ObjectMeta: metav1.ObjectMeta{Name: id}, Spec: mgmtv3.ClusterSpec{DisplayName: display}})); err != nil {
			return fmt.Errorf("creating management cluster %s: %w", id, err)
		}
	}
	credential := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cc-demo", Namespace: "cattle-global-data"},
		Type:       "provisioning.cattle.io/cloud-credential",
		StringData: map[string]string{harvester.ClusterIDKey: demoHarvesterID, "harvestercredentialConfig-clusterType": "imported"},
	}
	if err := ignoreExists(kube.CoreV1().Secrets(credential.Namespace).Create(ctx, credential, metav1.CreateOptions{})); err != nil {
		return fmt.Errorf("creating the cloud credential: %w", err)
	}
	if err := seedMachineConfig(ctx, env); err != nil {
		return err
	}
	ranges := kubefip.NewFactoryFromConfigOrDie(env.Config).Kubefip().V1().FloatingIPRange()
	if err := ignoreExists(ranges.Create(&kubefipv1.FloatingIPRange{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-vlan10", Annotations: map[string]string{
			kubefipv1.AnnotationHarvesterClusterName: "harvester-demo",
			kubefipv1.AnnotationHarvesterNetworkName: "vlan10",
		}},
		Spec: kubefipv1.FloatingIPRangeSpec{IPRange: "192.0.2.0/28"},
	})); err != nil {
		return fmt.Errorf("creating the demo range: %w", err)
	}
	return seedProvisioningCluster(env)
}

func seedMachineConfig(ctx context.Context, env *testenv.Environment) error {
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	config := &unstructured.Unstructured{Object: map[string]interface{}{
		"cpuCount": "2", "memorySize": "4", "diskSize": "40", "imageName": "default/ubuntu",
		"networkInfo": `{"interfaces":[{"networkName":"default/vlan10","macAddress":""}]}`,
	}}
	config.SetGroupVersionKind(testenv.HarvesterConfigGVK)
	config.SetNamespace("fleet-default")
	config.SetName("nc-demo-pool1")
	_, err = dyn.Resource(discovery.HarvesterConfigResource()).Namespace("fleet-default").Create(ctx, config, metav1.CreateOptions{})
	if err := ignoreExists(nil, err); err != nil {
		return fmt.Errorf("creating the HarvesterConfig: %w", err)
	}
	return nil
}

func seedProvisioningCluster(env *testenv.Environment) error {
	clusters := provisioning.NewFactoryFromConfigOrDie(env.Config).Provisioning().V1().Cluster()
	c := &provv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: demoCluster, Namespace: "fleet-default"}}
	c.Spec.CloudCredentialSecretName = "cattle-global-data:cc-demo"
	c.Spec.RKEConfig = &provv1.RKEConfig{MachinePools: []provv1.RKEMachinePool{{
		Name: "pool1", ControlPlaneRole: true, EtcdRole: true, WorkerRole: true,
		NodeConfig: &corev1.ObjectReference{Kind: harvester.MachineConfigKind, Name: "nc-demo-pool1"},
	}}}
	created, err := clusters.Create(c)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating the provisioning cluster: %w", err)
	}
	created.Status.ClusterName = demoNamespace
	if _, err := clusters.UpdateStatus(created); err != nil {
		return fmt.Errorf("setting the provisioning cluster's status: %w", err)
	}
	return nil
}

// newGuestNamespace creates the guest cluster's namespace after demoDelay, as Rancher does a
// moment after the cluster: the operator has been waiting for it, and allocates at once.
func newGuestNamespace(ctx context.Context, env *testenv.Environment) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(demoDelay):
	}
	kube, err := kubernetes.NewForConfig(env.Config)
	if err == nil {
		err = ignoreExists(kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}}, metav1.CreateOptions{}))
	}
	if err != nil {
		logrus.Warnf("demo: creating namespace %s: %v", demoNamespace, err)
		return
	}
	logrus.Infof("demo: Rancher created namespace %s for guest cluster fleet-default/%s", demoNamespace, demoCluster)
}

// ignoreExists returns err unless it says the object exists already.
func ignoreExists(_ interface{}, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
