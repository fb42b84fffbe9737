//go:build cgo

package render

// builtWithCgo says that the binary starts its threads with the C library (see dataLimit).
const builtWithCgo = true
