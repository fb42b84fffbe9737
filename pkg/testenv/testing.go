package testenv

import (
	"testing"

	"helm.sh/helm/v3/pkg/chart"
)

// ChartRepoForTest starts a chart repository serving charts and closes it when the test ends.
func ChartRepoForTest(t testing.TB, charts ...*chart.Chart) *ChartRepo {
	t.Helper()
	repo, err := StartChartRepo(charts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repo.Close() })
	return repo
}

// OCIRegistryForTest starts an empty OCI registry and closes it when the test ends.
func OCIRegistryForTest(t testing.TB) *OCIRegistry {
	t.Helper()
	oci, err := StartOCIRegistry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = oci.Close() })
	return oci
}
