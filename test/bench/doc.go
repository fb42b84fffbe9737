// Package bench holds the benchmarks that run the operator binary against a real kube-apiserver
// and etcd (test/rig): discovery convergence, start-up with and without guest clusters, and large
// ranges. `make bench` runs them. It has no code of its own.
package bench
