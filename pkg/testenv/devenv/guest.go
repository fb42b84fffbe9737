package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	mgmtv3 "github.com/rancher/rancher/pkg/apis/management.cattle.io/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/management.cattle.io"
	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/provisioning.cattle.io"
	"github.com/kubefip/kube-fip-operator/pkg/testenv"
)

// connectDemoGuest gives the demo guest cluster a real API server behind a stand-in for Rancher's
// cluster proxy, the kubeconfig Secret Rancher would write, and a Connected management cluster, so
// that the operator configures kube-vip in it. It returns an administrator kubeconfig of the guest
// itself, written next to the operator's, for the user to look inside.
func connectDemoGuest(ctx context.Context, env *testenv.Environment, dir string) (string, *testenv.ClusterProxy, error) {
	g, err := env.StartGuest("demo")
	if err != nil {
		return "", nil, err
	}
	proxy, err := testenv.StartClusterProxy()
	if err != nil {
		return "", nil, err
	}
	if _, err := testenv.PublishRancherAddress(env.Config, proxy.URL); err != nil {
		return "", proxy, err
	}
	const token = "demo-token"
	if err := proxy.Register(demoNamespace, g, token); err != nil {
		return "", proxy, err
	}
	kc, err := proxy.Kubeconfig(demoNamespace, token)
	if err != nil {
		return "", proxy, err
	}
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return "", proxy, err
	}
	secretName := demoCluster + "-kubeconfig"
	if err := ignoreExists(kube.CoreV1().Secrets("fleet-default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: "fleet-default"},
		Data:       map[string][]byte{"value": kc},
	}, metav1.CreateOptions{})); err != nil {
		return "", proxy, fmt.Errorf("creating the demo kubeconfig Secret: %w", err)
	}

	prov := provisioning.NewFactoryFromConfigOrDie(env.Config).Provisioning().V1().Cluster()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := prov.Get("fleet-default", demoCluster, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c.Status.ClientSecretName = secretName
		_, err = prov.UpdateStatus(c)
		return err
	}); err != nil {
		return "", proxy, fmt.Errorf("pointing the demo cluster at its kubeconfig: %w", err)
	}
	mgmt := management.NewFactoryFromConfigOrDie(env.Config).Management().V3().Cluster()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m, err := mgmt.Get(demoNamespace, metav1.GetOptions{})
		if err != nil {
			return err
		}
		m.Status.Conditions = []mgmtv3.ClusterCondition{{Type: "Connected", Status: corev1.ConditionTrue}}
		_, err = mgmt.UpdateStatus(m)
		return err
	}); err != nil {
		return "", proxy, fmt.Errorf("marking the demo cluster Connected: %w", err)
	}

	user, err := g.Kubeconfig()
	if err != nil {
		return "", proxy, err
	}
	path := filepath.Join(dir, "guest-kubeconfig")
	return path, proxy, os.WriteFile(path, user, 0o600)
}
