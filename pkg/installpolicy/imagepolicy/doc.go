// Package imagepolicy holds the exact image repositories each guest chart's workload may run
// (images.go), and the registry an air-gapped deployment names (registry.go): Rancher's system
// default registry or the form's override, where every guest image then comes from, as Rancher's
// own charts prefix theirs with global.cattle.systemDefaultRegistry. The images are then the
// pinned ones under that registry, at the upstream repository's path without its registry host,
// which is where mirroring tools put them (crane copy ghcr.io/kube-vip/kube-vip:v1.0.0
// <registry>/kube-vip/kube-vip:v1.0.0): that mapping is the whole allow-list.
package imagepolicy
