package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/repo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubefip/kube-fip-operator/package/charts"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
)

// TestChartRepositoryOverHTTP packages both charts at release 1.2.3 as make package-helm does
// (charts.PackageRepository, relative URLs), serves the directory over HTTP on loopback and uses it
// as Helm and Rancher use an HTTP repository: the index, read with Helm's repo package through its
// HTTP getter, holds both charts at 1.2.3, no pre-release; each archive, downloaded from the URL
// the index names, has the index's digest; the icon the index names, resolved against the
// repository URL, is the chart's SVG; the CRD chart, then the operator chart, install from the
// downloaded archives into an API server, both releases deployed and the CRDs served.
func TestChartRepositoryOverHTTP(t *testing.T) {
	shards.Take(t)
	ctx := context.Background()
	root, err := rig.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := charts.PackageRepository(charts.RepositoryOptions{Version: "1.2.3", AppVersion: "v1.2.3",
		ChartsDir: filepath.Join(root, "charts"), Dest: dir}); err != nil {
		t.Fatal(err)
	}
	// The repository lives under a path, as it would on a web server: /kube-fip/ serves dir.
	srv := httptest.NewServer(http.StripPrefix("/kube-fip", http.FileServer(http.Dir(dir))))
	t.Cleanup(srv.Close)
	repoURL := srv.URL + "/kube-fip"

	getters := getter.Providers{{Schemes: []string{"http", "https"}, New: getter.NewHTTPGetter}}
	chartRepo, err := repo.NewChartRepository(&repo.Entry{Name: "kube-fip", URL: repoURL}, getters)
	if err != nil {
		t.Fatal(err)
	}
	chartRepo.CachePath = t.TempDir()
	indexPath, err := chartRepo.DownloadIndexFile()
	if err != nil {
		t.Fatalf("downloading the index: %v", err)
	}
	index, err := repo.LoadIndexFile(indexPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(index.Entries) != 2 {
		t.Errorf("index holds %d charts; want 2", len(index.Entries))
	}
	get, err := getters.ByScheme("http")
	if err != nil {
		t.Fatal(err)
	}
	download := func(ref string) []byte {
		t.Helper()
		u, err := repo.ResolveReferenceURL(repoURL, ref)
		if err != nil {
			t.Fatal(err)
		}
		buf, err := get.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		return buf.Bytes()
	}

	guest := startChartGuest(t, "chart-repository")
	helm := newHelmCluster(t, guest.Config)
	kube := kubernetes.NewForConfigOrDie(guest.Config)
	for _, name := range []string{charts.CRDChart, charts.OperatorChart} {
		cv, err := index.Get(name, "")
		if err != nil {
			t.Fatalf("%s in the index: %v (Helm's latest-version lookup skips pre-releases)", name, err)
		}
		if v, err := semver.StrictNewVersion(cv.Version); err != nil || v.Prerelease() != "" || cv.Version != "1.2.3" {
			t.Errorf("%s version %q; want the release 1.2.3", name, cv.Version)
		}
		if len(cv.URLs) == 0 {
			t.Fatalf("%s has no URL in the index", name)
		}
		data := download(cv.URLs[0])
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != cv.Digest {
			t.Errorf("%s archive digest %x; the index says %s", name, sum, cv.Digest)
		}
		c, err := loader.LoadArchive(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s archive: %v", name, err)
		}
		if name == charts.OperatorChart {
			checkServedIcon(t, download(cv.Icon), filepath.Join(root, "charts", name, "icon.svg"))
		}
		if err := helm.installChart(c, nil); err != nil {
			t.Fatalf("installing %s %s from the repository: %v", name, cv.Version, err)
		}
		if name == charts.CRDChart {
			rig.Eventually(t, time.Minute, "the kubefip API to be served", func() bool {
				list, err := kube.Discovery().ServerResourcesForGroupVersion("kubefip.k8s.binbash.org/v1")
				return err == nil && len(list.APIResources) >= 2
			})
		}
		rel, err := action.NewStatus(helm.action()).Run(name)
		if err != nil {
			t.Fatalf("status of %s: %v", name, err)
		}
		if rel.Info.Status != release.StatusDeployed || rel.Chart.Metadata.Version != "1.2.3" || rel.Chart.Metadata.AppVersion != "v1.2.3" {
			t.Errorf("release %s: %s, chart %s app %s; want deployed, 1.2.3, v1.2.3", name, rel.Info.Status, rel.Chart.Metadata.Version, rel.Chart.Metadata.AppVersion)
		}
	}
	crds := map[string]bool{}
	list, err := kube.Discovery().ServerResourcesForGroupVersion("kubefip.k8s.binbash.org/v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.APIResources {
		crds[r.Name] = true
	}
	if !crds["floatingips"] || !crds["floatingipranges"] {
		t.Errorf("kubefip resources served: %v; want floatingips and floatingipranges", crds)
	}
	if _, err := kube.AppsV1().Deployments(chartNamespace).Get(ctx, "kube-fip-operator", metav1.GetOptions{}); err != nil {
		t.Errorf("the operator's Deployment: %v", err)
	}
}

// checkServedIcon checks that data is the icon file.
func checkServedIcon(t *testing.T, data []byte, file string) {
	t.Helper()
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, want) || !bytes.Contains(data, []byte("<svg")) {
		t.Errorf("served icon (%d bytes) is not the SVG %s", len(data), file)
	}
}

// startChartGuest starts an API server for chart installs, with the namespaces the operator chart
// expects from Rancher, and stops it when the test ends.
func startChartGuest(t *testing.T, name string) *controlplane.Guest {
	t.Helper()
	guest, err := shards.Of(t).Env.StartGuest(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := guest.Stop(); err != nil {
			t.Logf("stopping the %s API server: %v", name, err)
		}
	})
	kube := kubernetes.NewForConfigOrDie(guest.Config)
	for _, ns := range []string{"fleet-default", "cattle-global-data", "cattle-dashboards"} {
		if _, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Rancher's CRDs, which the operator watches and the chart's install check looks for.
	crds, err := rancher.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(guest.Config, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		t.Fatalf("installing Rancher's CRDs: %v", err)
	}
	return guest
}
