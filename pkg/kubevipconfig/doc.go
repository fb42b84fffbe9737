// Package kubevipconfig is what the operator writes into a guest cluster for kube-vip: the
// addresses in kube-vip-cloud-provider's ConfigMap (as the provider reads them, v0.0.12), the
// node selector that turns the Harvester cloud provider's own kube-vip off, and the operator's copy
// of the deployment's image pull Secret. It works on any client of the guest; pkg/guest reaches
// the guest.
package kubevipconfig
