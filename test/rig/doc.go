// Package rig is the test rig's common ground: where the repository is, how a test waits for
// something observable, and a free loopback port. Its subpackages build the world the tests and
// `make run` use, one concern each:
//
//   - controlplane: a real kube-apiserver and etcd, shards and guest API servers on that etcd, the
//     operator process, an API proxy that records and holds requests;
//   - rancher: Rancher's CRDs and the objects Rancher keeps for a Harvester guest cluster;
//   - guests: the test cluster proxy through which Rancher serves each guest's API, and hostile
//     Helm release records;
//   - harvester: a Harvester cluster as Rancher reaches it, a real API server with the CRDs of its
//     VM networks, load balancer and DHCP pools and VMs, copied from those projects, and objects
//     shaped as their controllers write them;
//   - cloudprovider: kube-vip-cloud-provider's reading of its ConfigMap;
//   - chartrepo: stand-in charts, a chart repository and an OCI registry;
//   - forwardproxy: a real HTTP forward proxy (Debian's tinyproxy) on loopback, with its access
//     log, and servers under a private CA reached only through it;
//   - externaldns: external-dns's own DNSEndpoint CRD, from its module as the Go module proxy
//     serves it, the real external-dns (scripts/build-externaldns) and a real DNS server it writes
//     to (Debian's BIND), on loopback;
//   - alerts: a rendered PrometheusRule's alert expressions, evaluated over the series an operator
//     serves;
//   - dataplane: network namespaces, links and the real kube-vip and kube-vip-cloud-provider;
//   - node: clusters whose kubelet runs pods, for the end-to-end suite, and the images they run
//     (the real Traefik among them, scripts/build-traefik);
//   - backup: Rancher Backups' ResourceSets;
//   - fakes: in-memory stand-ins for the generated controllers, for the unit tests under pkg/;
//   - suite: what the packages of tests against the real control plane share, and the shards the
//     integration tests run on side by side.
//
// devenv is `make run`'s local environment. The unit tests under pkg/ and package/ use rig itself,
// fakes, chartrepo, cloudprovider, backup and alerts: none needs a control plane (see
// architecture_test.go).
package rig
