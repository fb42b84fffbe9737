// Package e2e is the end-to-end suite: the operator as its chart deploys it, in a cluster whose
// kubelet runs pods, and kube-vip as its DaemonSet deploys it, in a guest cluster of the same kind
// behind a Rancher-like cluster proxy (test/rig/node). The images are the ones this repository's
// build writes (make package) and ones built here from the pinned sources of kube-vip and
// kube-vip-cloud-provider; the charts are the packaged ones (make package-helm), installed with the
// Helm SDK. Every assertion is on what the real components did: pod phases and restarts, Leases,
// an address on a node's interface, a client's response over ARP.
//
// It needs root (network namespaces, containers); elsewhere each test reports as skipped.
package e2e
