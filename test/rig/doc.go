// Package rig is the test rig's common ground: where the repository is, how a test waits for
// something observable, and a free loopback port. Its subpackages build the world the tests and
// `make run` use, one concern each: controlplane (a real kube-apiserver and etcd, the operator
// process, an API proxy that records and holds requests), guests (guest API servers, the test
// cluster proxy, the fake Rancher objects), chartrepo (stand-in charts, a chart repository and
// an OCI registry), dataplane (network namespaces, links and the real kube-vip) and backup
// (Rancher Backups' ResourceSets). devenv is `make run`'s local environment.
package rig
