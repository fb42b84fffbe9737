package guestcluster

import (
	"context"
	"net/netip"
	"time"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
)

// guestAPI is what a pass does in one guest cluster: a guest.Client through Rancher's cluster
// proxy with the controller's Helm installer (helmGuest) in the operator, a fake in the handler's
// unit tests.
type guestAPI interface {
	// Credentials are the secrets of the guest's kubeconfig, masked in every message of the pass.
	Credentials() []string
	Check(ctx context.Context) (guest.Connection, error)
	DisableHarvesterKubevip(ctx context.Context) (guest.DaemonSetResult, error)
	// EnsureAddresses writes the addresses of the guest's FloatingIPs into the ConfigMap ref.
	EnsureAddresses(ctx context.Context, ref guest.ConfigMapRef, want guest.Addresses, update bool) (guest.AddressesResult, error)
	// EnsureRelease keeps one Helm release installed as rel asks.
	EnsureRelease(ctx context.Context, rel guest.Release) (guest.Result, error)
	// ProviderConfigMap says where the installed kube-vip-cloud-provider reads its address pool.
	ProviderConfigMap(ctx context.Context, namespace, release string) (guest.ConfigMapRef, error)
}

// heldAddresses answers which addresses a FloatingIP holds; the allocation.Manager.
type heldAddresses interface {
	HeldBy(rangeName, uid string) []netip.Addr
}

// helmGuest is a guest cluster reached through Rancher's cluster proxy.
type helmGuest struct {
	*guest.Client
	installer *guest.Installer
}

func (g helmGuest) EnsureRelease(ctx context.Context, rel guest.Release) (guest.Result, error) {
	return g.installer.Ensure(ctx, g.Client, rel)
}

func (g helmGuest) ProviderConfigMap(ctx context.Context, namespace, release string) (guest.ConfigMapRef, error) {
	return g.installer.ProviderConfigMap(ctx, g.Client, namespace, release)
}

// connectThroughRancher returns how the controller reaches a guest cluster: with its kubeconfig
// Secret's data, through Rancher's cluster proxy, every request ending with the pass, and
// installing with installer.
func connectThroughRancher(installer *guest.Installer, timeout time.Duration) func(pass context.Context, t guest.Target) (guestAPI, error) {
	return func(pass context.Context, t guest.Target) (guestAPI, error) {
		client, err := guest.NewClient(pass, t, timeout)
		if err != nil {
			return nil, err
		}
		return helmGuest{Client: client, installer: installer}, nil
	}
}
