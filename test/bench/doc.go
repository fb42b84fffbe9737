// Package bench holds the benchmarks that run the operator binary against a real kube-apiserver
// and etcd (test/rig): start-up with and without guest clusters, the writes alone, and large ranges. `make bench` runs them. It has no code of its own.
package bench
