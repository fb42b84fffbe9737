package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubefip/kube-fip-operator/test/rig/cloudprovider"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/dataplane"
)

// demoService is the LoadBalancer Service the demo creates in the guest.
const demoService = "demo-web"

// serveDemoLoadBalancer runs the real kube-vip-cloud-provider (built by scripts/build-dataplane)
// against the demo guest, as the provider the guest's owner runs (kubevipGuestInstall leaves the
// unlabelled demo cluster's provider to its owner, reading kube-system/kubevip), creates a
// LoadBalancer Service there once the operator has written the address, and prints the address the
// Service got. kube-vip itself, which binds that address on a link and answers ARP for it, needs
// root and network namespaces: the data-plane test in `make test` runs it.
func serveDemoLoadBalancer(ctx context.Context, guestKubeconfig, dir string) (*controlplane.Process, error) {
	dp, err := dataplane.BuildDataplane()
	if err != nil {
		return nil, err
	}
	home := filepath.Join(dir, "provider-home")
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(guestKubeconfig)
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(home, ".kube", "config")
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		return nil, err
	}
	logrus.Infof("starting kube-vip-cloud-provider from %s in the demo guest cluster", dp.Dir)
	p, err := dataplane.StartIn(-1, dp.Provider(), nil, home, nil,
		"--kubeconfig="+kubeconfig, "--OutSideCluster", "--leader-elect=false", "--secure-port=0")
	if err != nil {
		return nil, err
	}
	go func() {
		addr, err := demoLoadBalancer(ctx, kubeconfig)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			logrus.Warnf("demo: the LoadBalancer Service got no address: %v; kube-vip-cloud-provider's output ends:\n%s", err, p.Logs())
		default:
			fmt.Fprintf(os.Stderr, `
  Demo: kube-vip-cloud-provider gave the LoadBalancer Service default/%s in the guest cluster
  the FloatingIP %s (annotation kube-vip.io/loadbalancerIPs):
    kubectl --kubeconfig %s get service %s -o wide
  kube-vip then binds that address on a control-plane node's interface and answers ARP for it;
  that needs root and network namespaces, which this demo does without: run 'make test' as root
  (TestDataPlaneServesTheFloatingIP) to see the real kube-vip serve it.

`, demoService, addr, guestKubeconfig, demoService)
		}
	}()
	return p, nil
}

// demoLoadBalancer waits for the operator's address in kube-system/kubevip, creates the demo
// Service and waits for the provider to give it an address.
func demoLoadBalancer(ctx context.Context, kubeconfig string) (netip.Addr, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return netip.Addr{}, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return netip.Addr{}, err
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		cm, err := kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubevip", metav1.GetOptions{})
		return err == nil && cm.Data["cidr-global"] != "", nil
	})
	if err != nil {
		return netip.Addr{}, fmt.Errorf("the operator wrote no address into kube-system/kubevip: %w", err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: demoService, Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	if _, err := kube.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return netip.Addr{}, err
	}
	var addr netip.Addr
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := kube.CoreV1().Services("default").Get(ctx, demoService, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		a, err := netip.ParseAddr(s.Annotations[cloudprovider.LoadBalancerIPsKey])
		addr = a
		return err == nil, nil
	})
	return addr, err
}
