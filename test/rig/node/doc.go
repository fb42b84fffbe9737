// Package node starts Kubernetes clusters whose kubelet runs pods, for the end-to-end suite: the
// control plane the other tests use (kube-apiserver and etcd), plus kube-controller-manager,
// kube-scheduler, kubelet and kube-proxy at the same pinned version (scripts/build-node), and
// containerd, runc and the CNI plugins from Debian's packages (scripts/install-node-deps). Each
// cluster is one node in network namespaces of its own, so that several run side by side and
// nothing touches the host's network but one veth address from 198.18.0.0/15:
//
//	host:   kfo<i> 198.18.<i>.1/24  — the API server, etcd, controller-manager and scheduler listen here
//	lan:    a bridge joining the host's link, the node's and a client's (the cluster's VM network)
//	node:   enp1s0 198.18.<i>.2/24 — containerd, the kubelet, kube-proxy and every pod's sandbox
//	client: eth0 198.18.<i>.3/24   — another machine on the node's network
//
// A test may join the node to a second VM network (Cluster.AddSegment): a bridge of its own
// (lan2), the node's second link at 198.18.<100+i>.2/24 and a client (client2) at .3; the host is
// not on it.
//
// The node's interface is named as a Harvester VM's first virtio NIC is, enp1s0, the interface the
// operator's default kube-vip values name. Pods get 198.19.<2i>.0/24 and Services 198.19.<2i+1>.0/24.
//
// Every image a cluster runs is built here (images.go), pushed to a registry of the test's
// (test/rig/registry) and pulled from it by the node's containerd, as an air-gapped node pulls
// (Options.Registry); nothing is imported.
package node
