//go:build tools

// Keeps external-dns in this module's requirements for `go mod tidy`; the program itself is
// built as the package sigs.k8s.io/external-dns.
package tools

import _ "sigs.k8s.io/external-dns/controller"
