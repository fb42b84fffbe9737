// Command devenv is `make run`: it starts the embedded local environment (a real kube-apiserver and
// etcd with the kubefip and Rancher CRDs and a default kube-fip-config), seeds a Rancher-like demo
// (a Harvester cluster, a range, and a guest cluster whose namespace appears a few seconds later),
// runs the operator binary against it, prints how to reach it, and on Ctrl-C stops the operator and
// then the control plane.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
)

func main() {
	operatorBinary := flag.String("operator", "bin/kube-fip-operator", "operator binary to run")
	namespace := flag.String("namespace", "kube-fip", "operator namespace")
	metricsPort := flag.Int("metrics-port", 8080, "metrics port of the operator")
	flag.Parse()

	if err := run(*operatorBinary, *namespace, *metricsPort); err != nil {
		logrus.Fatal(err)
	}
}

func run(operatorBinary, namespace string, metricsPort int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	logrus.Info("starting the local control plane (kube-apiserver and etcd)")
	env, err := controlplane.Start()
	if err != nil {
		return err
	}
	defer func() {
		logrus.Info("stopping the local control plane")
		if err := env.Stop(); err != nil {
			logrus.Warnf("stopping the control plane: %v", err)
		}
	}()

	kubeconfig, err := stableKubeconfig(env.Kubeconfig)
	if err != nil {
		return err
	}
	if err := seed(ctx, env, namespace); err != nil {
		return err
	}
	guestKubeconfig, guestPath, proxy, err := connectDemoGuest(env, filepath.Dir(kubeconfig))
	if proxy != nil {
		defer proxy.Close()
	}
	if err != nil {
		return fmt.Errorf("connecting the demo guest cluster: %w", err)
	}
	world, err := rancher.NewWorld(env.Config)
	if err != nil {
		return err
	}
	if err := seedRancher(world, guestKubeconfig); err != nil {
		return fmt.Errorf("seeding the demo guest cluster: %w", err)
	}

	logrus.Infof("starting %s", operatorBinary)
	// Charts may also come from a repository or registry served on this machine.
	args := append([]string{"--kubeconfig", kubeconfig, "--namespace", namespace, "--metrics-port", fmt.Sprint(metricsPort),
		"--metrics-bind-address", "127.0.0.1"}, controlplane.LoopbackChartSourceArgs()...)
	op, err := controlplane.StartOperator(operatorBinary, os.Stderr, nil, args...)
	if err != nil {
		return err
	}
	go newGuestNamespace(ctx, world)
	provider, err := serveDemoLoadBalancer(ctx, guestPath, filepath.Dir(kubeconfig))
	if err != nil {
		logrus.Warnf("the demo goes on without kube-vip-cloud-provider: %v", err)
	} else {
		defer func() { _ = provider.Stop(10 * time.Second) }()
	}
	fmt.Fprintf(os.Stderr, `
  The operator runs against a local Kubernetes API server.
    export KUBECONFIG=%s
    kubectl get fiprange,fip -A
    curl http://127.0.0.1:%d/metrics
  Demo: Rancher guest cluster fleet-default/%s on Harvester cluster harvester-demo gets its
  namespace %s in %s; its FloatingIP from 192.0.2.0/28 follows within a second:
    kubectl get fip -A
  and the operator writes the address into the guest cluster's kube-vip ConfigMap, reached
  through a stand-in for Rancher's cluster proxy:
    kubectl --kubeconfig %s -n kube-system get configmap kubevip -o yaml
  Press Ctrl-C to stop.

`, kubeconfig, metricsPort, demoCluster, demoNamespace, demoDelay, guestPath)

	select {
	case <-ctx.Done():
	case <-op.Done():
		logrus.Error("the operator exited")
	}
	logrus.Info("stopping the operator")
	return op.Stop(15 * time.Second)
}

// stableKubeconfig copies the environment's kubeconfig to a fixed place under the user cache so
// the printed path stays the same from one run to the next.
func stableKubeconfig(src string) (string, error) {
	cache, err := controlplane.CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "run")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, "kubeconfig")
	return dst, os.WriteFile(dst, data, 0o600)
}

// seed creates the operator namespace and a default kube-fip-config.
func seed(ctx context.Context, env *controlplane.Environment, namespace string) error {
	client, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-fip-config", Namespace: namespace},
		Data: map[string]string{
			"logLevel":                    "Info",
			"operateGuestClusterInterval": "60",
			"kubevipGuestInstall":         "clusterlabel",
		},
	}
	if _, err := client.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating kube-fip-config: %w", err)
	}
	return nil
}
