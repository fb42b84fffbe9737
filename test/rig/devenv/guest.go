package main

import (
	"os"
	"path/filepath"

	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
)

// connectDemoGuest gives the demo guest cluster a real API server behind a stand-in for Rancher's
// cluster proxy, so that the operator configures kube-vip in it. It returns the kubeconfig
// Rancher's Secret for the guest holds, and the path of an administrator kubeconfig of the guest
// itself, written next to the operator's, for the user to look inside.
func connectDemoGuest(env *controlplane.Environment, dir string) (kubeconfig []byte, path string, proxy *guests.ClusterProxy, err error) {
	g, err := env.StartGuest("demo")
	if err != nil {
		return nil, "", nil, err
	}
	proxy, err = guests.StartClusterProxy()
	if err != nil {
		return nil, "", nil, err
	}
	if _, err := rancher.PublishRancherAddress(env.Config, proxy.URL); err != nil {
		return nil, "", proxy, err
	}
	const token = "demo-token"
	if err := proxy.Register(demoNamespace, g, token); err != nil {
		return nil, "", proxy, err
	}
	if kubeconfig, err = proxy.Kubeconfig(demoNamespace, token); err != nil {
		return nil, "", proxy, err
	}
	user, err := g.Kubeconfig()
	if err != nil {
		return nil, "", proxy, err
	}
	path = filepath.Join(dir, "guest-kubeconfig")
	return kubeconfig, path, proxy, os.WriteFile(path, user, 0o600)
}
