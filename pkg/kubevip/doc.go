// Package kubevip knows how each generation of kube-vip reads the environment that the kube-vip
// chart renders into its DaemonSet. The guest controller asks it about every kube-vip container
// Helm renders, before anything is applied: a value that the image would misread is translated
// where the meaning is certain, refused otherwise, so that a chart and an image that do not belong
// together are never installed and silently broken. The tables were read from kube-vip's source
// at the releases each Generation names. It imports nothing of Kubernetes.
package kubevip
