// Package dataplane runs the real kube-vip and kube-vip-cloud-provider (scripts/build-dataplane)
// in network namespaces joined by veth links, so a test can reach an address kube-vip serves.
package dataplane
