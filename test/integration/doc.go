// Package integration holds the tests that run the operator binary against a real kube-apiserver
// and etcd (test/rig). It has no code of its own.
package integration
