package main

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	lassometrics "github.com/rancher/lasso/pkg/metrics"
)

// TestLassoControllerMetricsAreOn: in the operator's binary, lasso's init found its metrics switch
// on and registered its collectors on Prometheus's default registry, where /metrics gathers them
// (pkg/metrics/controllermetrics sets the switch before lasso's init reads it). Run with
// CATTLE_PROMETHEUS_METRICS set to anything but "true", it is right to fail: the operator leaves a
// deployment's own choice alone.
func TestLassoControllerMetricsAreOn(t *testing.T) {
	err := prometheus.DefaultRegisterer.Register(lassometrics.TotalControllerExecutions)
	var already prometheus.AlreadyRegisteredError
	if !errors.As(err, &already) {
		if err == nil {
			prometheus.DefaultRegisterer.Unregister(lassometrics.TotalControllerExecutions)
		}
		t.Fatalf("lasso's controller collectors are not on the default registry (registering one again: %v)", err)
	}
}
