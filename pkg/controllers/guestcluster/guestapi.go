package guestcluster

import (
	"context"
	"net/netip"
	"time"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/guestwatch"
	"github.com/kubefip/kube-fip-operator/pkg/helminstall"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
)

// guestAPI is what a pass does in one guest cluster, in order: probe it (pkg/guest), turn the
// Harvester cloud provider's kube-vip off and write the addresses and the image pull Secret
// (pkg/kubevipconfig), install the charts and find the provider's ConfigMap (pkg/helminstall). In the operator it is a
// guest.Client through Rancher's cluster proxy with the controller's installer (helmGuest); in the
// handler's unit tests, a fake.
type guestAPI interface {
	// Credentials are the secrets of the guest's kubeconfig, masked in every message of the pass.
	Credentials() []string
	Check(ctx context.Context) (guest.Connection, error)
	DisableHarvesterKubevip(ctx context.Context) (kubevipconfig.DaemonSetResult, error)
	RestoreHarvesterKubevip(ctx context.Context) (kubevipconfig.DaemonSetResult, error)
	// HarvesterKubevip says whether the Harvester cloud provider's kube-vip can take over
	// (kubevipconfig.ReadHarvesterKubevip).
	HarvesterKubevip(ctx context.Context) (kubevipconfig.HarvesterKubevip, string, error)
	// RemoveReleases uninstalls the operator's releases and pull Secret (helminstall).
	RemoveReleases(ctx context.Context, releases []v1.GuestRelease) helminstall.Removal
	// Serving says what serves the guest's addresses addrs: the operator's kube-vip DaemonSet
	// (none when kubevip is nil), and the Services kube-vip-cloud-provider handles, as the
	// cluster's watch (pkg/guestwatch) keeps them; a change of them that concerns an address
	// asked about queues the cluster's next pass.
	Serving(ctx context.Context, kubevip *kubevipconfig.KubevipRef, addrs []netip.Addr) (kubevipconfig.Serving, error)
	EnsureAddresses(ctx context.Context, ref kubevipconfig.ConfigMapRef, want kubevipconfig.Addresses, update bool) (kubevipconfig.AddressesResult, error)
	EnsurePullSecret(ctx context.Context, namespace, name string, dockerConfig []byte) (kubevipconfig.PullSecretResult, error)
	EnsureRelease(ctx context.Context, rel helminstall.Release) (helminstall.Result, error)
	// ProviderConfigMap says where the installed kube-vip-cloud-provider reads its address pool.
	ProviderConfigMap(ctx context.Context, namespace, release string) (kubevipconfig.ConfigMapRef, error)
	// EnsureIngress keeps the Service that puts addrs on the guest's ingress controller
	// (kubevipconfig.EnsureIngressService), once it knows which one runs; without one, why.
	EnsureIngress(ctx context.Context, addrs []netip.Addr) (kubevipconfig.IngressResult, string, error)
	// RemoveIngress takes the operator's ingress Service out, and says whether there was one.
	RemoveIngress(ctx context.Context) (bool, error)
}

// heldAddresses answers which addresses a FloatingIP holds, and keeps those its cluster gave up;
// the allocation.Manager.
type heldAddresses interface {
	HeldBy(rangeName, uid string) []netip.Addr
	keptAddresses
}

// helmGuest is a guest cluster reached through Rancher's cluster proxy by one pass; what serves
// its addresses is read from the cluster's watch.
type helmGuest struct {
	*guest.Client
	installer *helminstall.Installer
	watches   *guestwatch.Set
	target    guestwatch.Target
	// asked are the addresses the pass asked Serving about so far: a change of a Service that
	// names one of them queues the cluster's next pass.
	asked *[]netip.Addr
}

func (g helmGuest) DisableHarvesterKubevip(ctx context.Context) (kubevipconfig.DaemonSetResult, error) {
	return kubevipconfig.DisableHarvesterKubevip(ctx, g.Apps)
}

func (g helmGuest) RestoreHarvesterKubevip(ctx context.Context) (kubevipconfig.DaemonSetResult, error) {
	return kubevipconfig.RestoreHarvesterKubevip(ctx, g.Apps)
}

func (g helmGuest) HarvesterKubevip(ctx context.Context) (kubevipconfig.HarvesterKubevip, string, error) {
	return kubevipconfig.ReadHarvesterKubevip(ctx, g.Apps, g.Core)
}

func (g helmGuest) RemoveReleases(ctx context.Context, releases []v1.GuestRelease) helminstall.Removal {
	return g.installer.RemoveReleases(ctx, g.Client, releases)
}

func (g helmGuest) Serving(ctx context.Context, kubevip *kubevipconfig.KubevipRef, addrs []netip.Addr) (kubevipconfig.Serving, error) {
	*g.asked = append(*g.asked, addrs...)
	t := g.target
	t.Kubevip = kubevip
	return g.watches.Serving(ctx, t, *g.asked, addrs)
}

func (g helmGuest) EnsureAddresses(ctx context.Context, ref kubevipconfig.ConfigMapRef, want kubevipconfig.Addresses, update bool) (kubevipconfig.AddressesResult, error) {
	return kubevipconfig.EnsureAddresses(ctx, g.Core, ref, want, update)
}

func (g helmGuest) EnsurePullSecret(ctx context.Context, namespace, name string, dockerConfig []byte) (kubevipconfig.PullSecretResult, error) {
	return kubevipconfig.EnsurePullSecret(ctx, g.Core, namespace, name, dockerConfig)
}

func (g helmGuest) EnsureRelease(ctx context.Context, rel helminstall.Release) (helminstall.Result, error) {
	return g.installer.Ensure(ctx, g.Client, rel)
}

func (g helmGuest) ProviderConfigMap(ctx context.Context, namespace, release string) (kubevipconfig.ConfigMapRef, error) {
	return g.installer.ProviderConfigMap(ctx, g.Client, namespace, release)
}

func (g helmGuest) EnsureIngress(ctx context.Context, addrs []netip.Addr) (kubevipconfig.IngressResult, string, error) {
	c, why, err := kubevipconfig.FindIngressController(ctx, g.Core)
	if err != nil || c == nil {
		return "", why, err
	}
	res, err := kubevipconfig.EnsureIngressService(ctx, g.Core, *c, addrs)
	return res, "", err
}

func (g helmGuest) RemoveIngress(ctx context.Context) (bool, error) {
	return kubevipconfig.RemoveIngressService(ctx, g.Core)
}

// connectThroughRancher returns how the controller reaches a guest cluster: with its kubeconfig
// Secret's data, through Rancher's cluster proxy, every request ending with the pass, installing
// with installer, and reading what serves from the cluster's watch in watches.
func connectThroughRancher(installer *helminstall.Installer, watches *guestwatch.Set, timeout time.Duration) func(pass context.Context, t guest.Target) (guestAPI, error) {
	return func(pass context.Context, t guest.Target) (guestAPI, error) {
		client, err := guest.NewClient(pass, t, timeout)
		if err != nil {
			return nil, err
		}
		return helmGuest{Client: client, installer: installer, watches: watches,
			target: guestwatch.Target{Key: t.ClusterID, Guest: t}, asked: new([]netip.Addr)}, nil
	}
}
