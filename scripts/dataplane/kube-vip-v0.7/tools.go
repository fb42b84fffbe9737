//go:build tools

// Package tools records the one program this module exists to build.
package tools

import _ "github.com/kube-vip/kube-vip"
