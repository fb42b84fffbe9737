// Package controllermetrics turns on lasso's controller and work queue metrics. The operator's
// main package imports it for that effect alone; nothing else may.
//
// lasso registers its collectors (lasso_controller_* and the workqueue_* series of every client-go
// work queue, through workqueue.SetProvider) on Prometheus's default registry, and counts into them
// at all, only when CATTLE_PROMETHEUS_METRICS is "true" as its pkg/metrics init() reads it: once,
// before main runs, into an unexported flag no call can change later. Setting the variable in main
// is therefore too late, and the operator must not depend on every deployment remembering it.
//
// This init() sets it first. Go initializes packages in the order of their import paths among
// those whose imports are initialized (the language specification, since Go 1.21): this package
// imports only os, which lasso's metrics package needs too, and
// github.com/kubefip/kube-fip-operator sorts before github.com/rancher/lasso, so this init always
// runs before lasso's. The variable is set once, to a constant, before any goroutine exists; a
// deployment that sets it to anything else (to turn the series off) is left as it chose.
// TestOperatorServesControllerMetrics scrapes the real binary and fails if the order ever changes.
package controllermetrics

import "os"

// EnvVar is the variable lasso reads.
const EnvVar = "CATTLE_PROMETHEUS_METRICS"

func init() {
	if _, set := os.LookupEnv(EnvVar); !set {
		_ = os.Setenv(EnvVar, "true")
	}
}
