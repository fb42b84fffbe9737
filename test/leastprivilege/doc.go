// Package leastprivilege holds the tests that run the operator binary with exactly the RBAC its
// chart grants, against a real kube-apiserver and etcd (test/rig): every scenario passes under it,
// the API server's authorizer refuses some request of that run with any one rule removed, and the
// migration from the original operator takes
// away the Secret access it left behind. It has no code of its own.
package leastprivilege
