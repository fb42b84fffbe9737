// Package guest works on one Rancher guest cluster through Rancher's cluster proxy: it builds a
// client from the kubeconfig Rancher keeps for the cluster, checks the connection, writes the
// kube-vip ConfigMap, neutralises the Harvester cloud provider's own kube-vip DaemonSet, and
// installs or upgrades Helm releases with the Helm SDK. Nothing here caches a guest's credentials:
// every operation starts from the Secret as it is now, so a rotated token is used at once.
package guest

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KubeconfigKey is the key of Rancher's cluster kubeconfig Secret holding the kubeconfig.
const KubeconfigKey = "value"

// DefaultTimeout bounds every single request to a guest cluster.
const DefaultTimeout = 15 * time.Second

// ErrNoKubeconfig: the Secret has no kubeconfig (yet).
var ErrNoKubeconfig = errors.New("the cluster's kubeconfig Secret has no kubeconfig")

// Client reaches one guest cluster.
type Client struct {
	// Name is the guest cluster's name, for messages.
	Name   string
	Config *rest.Config
	Kube   kubernetes.Interface
}

// NewClient builds a client from the kubeconfig bytes of the cluster's Secret. The error never
// quotes the kubeconfig: it carries credentials.
func NewClient(name string, kubeconfig []byte, timeout time.Duration) (*Client, error) {
	if len(kubeconfig) == 0 {
		return nil, ErrNoKubeconfig
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, errors.New("the cluster's kubeconfig Secret does not hold a valid kubeconfig")
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	cfg.Timeout = timeout
	cfg.QPS, cfg.Burst = 20, 40
	cfg.UserAgent = "kube-fip-operator"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a client for guest cluster %s: %w", name, err)
	}
	return &Client{Name: name, Config: cfg, Kube: kube}, nil
}
