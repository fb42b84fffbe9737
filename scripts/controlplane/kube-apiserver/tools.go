//go:build tools

// Package tools records the one program this module exists to build.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
